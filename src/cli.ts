#!/usr/bin/env node
import { runBundleCommand } from './bundles.js';
import { ConfigError, HELP, VERSION, parseConfig } from './config.js';
import { defaultStorePath, openStore } from './store/open.js';
import { maskStoreUrl } from './store/url.js';
import { serveHttp } from './transports/http.js';
import { serveStdio } from './transports/stdio.js';
import { runUiCommand } from './ui/command.js';

/** Entry point: flags and environment to config, then the transport. Only MCP frames ever go to stdout. */
async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'ui') return runUiCommand(argv.slice(1));
  if (argv[0] === 'export' || argv[0] === 'import') {
    try {
      return await runBundleCommand(argv[0], argv.slice(1));
    } catch (error) {
      console.error(`mcp-blackboard ${argv[0]}: ${(error as Error).message.split('\n')[0]}`);
      return 1;
    }
  }
  let parsed;
  try {
    parsed = parseConfig(argv);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`mcp-blackboard: ${error.message}`);
      return 2;
    }
    throw error;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const config = parsed.config;
  let store;
  try {
    store = await openStore(config.store, {
      maxValueBytes: config.maxValueBytes,
      synchronous: config.sync,
      changeRetentionMs: config.changeRetentionSeconds * 1000,
    });
  } catch (error) {
    console.error(
      `mcp-blackboard: cannot open the store ${maskStoreUrl(config.store ?? `sqlite://${defaultStorePath()}`)}: ${(error as Error).message.split('\n')[0]}`,
    );
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
  if (config.http) {
    const { url } = await serveHttp(config, store);
    console.error(`mcp-blackboard ${VERSION} serving Streamable HTTP at ${url} store=${where}${ns}${config.http.token ? ' (token required)' : ''}`);
    return new Promise<number>(() => {});
  }
  const { tools, closed } = await serveStdio(config, store);
  console.error(`mcp-blackboard ${VERSION} on stdio: ${tools} tools, store=${where}${ns}`);
  await closed;
  await store.close().catch(() => {});
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('mcp-blackboard: fatal:', error);
    process.exit(1);
  },
);
