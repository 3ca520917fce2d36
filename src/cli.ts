#!/usr/bin/env node
// The `mcp-blackboard` command: a subcommand from the table below, or (the default) the MCP server over stdio or HTTP.
import { exportCommand, importCommand } from './bundles.js';
import { ConfigError, VERSION, flagArgs, parseConfig, serveHelp, type Subcommand } from './config.js';
import { defaultStorePath, maskStoreUrl, openStore } from './store/open.js';
import type { VersionedStore } from './store/versioned-store.js';
import { runHttp } from './transports/http-command.js';
import { firstRunHint, serveStdio } from './transports/stdio.js';
import { plainNames, renderMentions } from './tool-mentions.js';
import { UI_HELP, runUiCommand } from './ui/command.js';

/** Subcommands by name; each brings its own flags and `--help`. Without one, the server runs. */
const COMMANDS: Record<string, Subcommand> = {
  export: exportCommand,
  import: importCommand,
  ui: {
    usage: 'ui [--store URL] [--namespace NS] [--port P]',
    summary: 'a read-only, live view of the board in a browser',
    help: UI_HELP,
    run: (argv) => runUiCommand(flagArgs(argv)),
  },
};

/** The first line of an error's message: what the user is shown, never a stack trace. */
function oneLine(error: unknown): string {
  const message = renderMentions(error instanceof Error ? error.message : String(error), plainNames);
  return message.split('\n')[0].trim() || (error instanceof Error ? error.name : 'unknown error');
}


/** Entry point: flags and environment to config, then the transport. Only MCP frames ever go to stdout. */
async function main(argv: string[]): Promise<number> {
  const first = argv[0];
  if (first !== undefined && !first.startsWith('-')) {
    const command = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
    if (!command) {
      throw new ConfigError(`unknown command "${first}". Commands: ${Object.keys(COMMANDS).join(', ')}; with none, it serves MCP. Run mcp-blackboard --help.`);
    }
    return command.run(argv.slice(1));
  }
  const parsed = parseConfig(argv);
  if (parsed.kind === 'help') {
    process.stdout.write(serveHelp(COMMANDS));
    return 0;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const config = parsed.config;
  let store: VersionedStore;
  try {
    store = await openStore(config.store, {
      maxValueBytes: config.maxValueBytes,
      synchronous: config.sync,
      changeRetentionMs: config.changeRetentionSeconds * 1000,
    });
  } catch (error) {
    console.error(`mcp-blackboard: cannot open the store ${config.store ? maskStoreUrl(config.store) : `sqlite://${defaultStorePath()}`}: ${oneLine(error)}`);
    return 1;
  }
  const shutdown = async (code: number): Promise<never> => {
    await store.close().catch(() => {});
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  const where = store.backend.description;
  // A backend that cannot promise "acknowledged means durable" with its server's settings says so (Redis).
  const warning = (store.backend as { warning?: string }).warning;
  if (warning) console.error(`mcp-blackboard: warning: ${warning}`);
  const ns = config.namespace ? ` namespace=${config.namespace}` : '';
  if (config.http) return runHttp(config, store);
  const { tools, closed } = await serveStdio(config, store);
  console.error(`mcp-blackboard ${VERSION} on stdio: ${tools} tools, store=${where}${ns}`);
  const hint = firstRunHint(process.stdin.isTTY === true, process.argv[1], argv);
  if (hint) console.error(hint);
  await closed;
  await store.close().catch(() => {});
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const command = Object.hasOwn(COMMANDS, process.argv[2] ?? '') ? ` ${process.argv[2]}` : '';
    console.error(`mcp-blackboard${command}: ${oneLine(error)}`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  },
);
