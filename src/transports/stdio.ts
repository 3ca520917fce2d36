import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Config } from '../config.js';
import { createServer } from '../server.js';
import type { VersionedStore } from '../store/versioned-store.js';

/** Serves one connection over stdin/stdout; resolves when the client goes away. */
export async function serveStdio(config: Config, store: VersionedStore): Promise<{ tools: number; closed: Promise<void> }> {
  const { server, tools } = await createServer(config, store);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  return { tools: tools.length, closed };
}
