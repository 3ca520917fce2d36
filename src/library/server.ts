// createBlackboardServer: the MCP server the command serves, over a store URL or a shared handle, to connect in-process.
import type { BlackboardServer, BlackboardServerOptions } from '../api/index.js';
import { createServer } from '../server.js';
import { checkOptions, configOf, storeOf } from './options.js';

/**
 * An MCP server for one connection — the same one `mcp-blackboard` serves, with the same tools and rules — to
 * connect with any transport, e.g. `InMemoryTransport.createLinkedPair()` for an agent framework in this process.
 */
export async function createBlackboardServer(options: BlackboardServerOptions = {}): Promise<BlackboardServer> {
  const checked = checkOptions(options, 'server');
  const { store, owned } = await storeOf(checked);
  try {
    const { server, tools, close } = await createServer(configOf(checked), store, { readOnly: checked.readOnly });
    return {
      server,
      tools,
      connect: (transport) => server.connect(transport),
      close: async () => {
        await close();
        if (owned) await store.close();
      },
    };
  } catch (error) {
    if (owned) await store.close().catch(() => {});
    throw error;
  }
}
