#!/usr/bin/env node
// The `mcp-blackboard` command: a subcommand from the table below, or (the default) the MCP server over stdio or HTTP.
import { exportCommand, importCommand } from './bundles.js';
import { ConfigError, VERSION, flagArgs, parseConfig, serveHelp, type Subcommand } from './config.js';
import { defaultStorePath, openStore } from './store/open.js';
import type { VersionedStore } from './store/versioned-store.js';
import { serveHttp } from './transports/http.js';
import { firstRunHint, serveStdio } from './transports/stdio.js';
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
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0].trim() || (error instanceof Error ? error.name : 'unknown error');
}

/** Why a listening socket could not be opened, in words that say what to do. */
function listenError(error: unknown, host: string, port: number): string {
  const code = (error as { code?: string }).code;
  if (code === 'EADDRINUSE') return `port ${port} on ${host} is already in use by another program; stop it or choose another port with --http PORT.`;
  if (code === 'EACCES') return `not allowed to listen on port ${port} on ${host}; ports below 1024 need privileges, choose another with --http PORT.`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `cannot listen on ${host}: no such local address; check --host.`;
  return `cannot listen on ${host}:${port}: ${oneLine(error)}`;
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
    console.error(`mcp-blackboard: cannot open the store ${config.store ?? `sqlite://${defaultStorePath()}`}: ${oneLine(error)}`);
    return 1;
  }
  const shutdown = async (code: number): Promise<never> => {
    await store.close().catch(() => {});
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  const where = store.backend.description;
  const ns = config.namespace ? ` namespace=${config.namespace}` : '';
  if (config.http) {
    let url: string;
    try {
      ({ url } = await serveHttp(config, store));
    } catch (error) {
      console.error(`mcp-blackboard: ${listenError(error, config.http.host, config.http.port)}`);
      await store.close().catch(() => {});
      return 1;
    }
    console.error(`mcp-blackboard ${VERSION} serving Streamable HTTP at ${url} store=${where}${ns}${config.http.token ? ' (token required)' : ''}`);
    return new Promise<number>(() => {});
  }
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
