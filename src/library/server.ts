// createBlackboardServer: the MCP server the command serves, over a store URL or a shared handle, to connect in-process.
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type { BlackboardServer, BlackboardServerOptions } from '../api/index.js';
import { createServer } from '../server.js';
import { clientNameIn, followListens, withInbound } from '../transports/inbound.js';
import { checkOptions, configOf, storeOf } from './options.js';

/**
 * An MCP server for one connection — the same one `mcp-blackboard` serves, with the same tools and rules — to
 * connect with any transport, e.g. `InMemoryTransport.createLinkedPair()` for an agent framework in this process.
 * Served through the SDK's connection entry, as over stdio: the client opens in 2026-07-28 or a 2025 revision, and
 * a 2026-07-28 `subscriptions/listen` hears the namespace's changes made through any process.
 */
export async function createBlackboardServer(options: BlackboardServerOptions = {}): Promise<BlackboardServer> {
  const checked = checkOptions(options, 'server');
  const { store, owned } = await storeOf(checked);
  try {
    const config = configOf(checked);
    const { server, tools, close, services } = await createServer(config, store, { readOnly: checked.readOnly });
    const ended: Array<() => Promise<void>> = [];
    // the roster names the client: a 2025 one by its `initialize`, a 2026-07-28 one by its requests' `_meta`
    let clientName: string | undefined;
    services.presence.client = () => server.server.getClientVersion()?.name ?? clientName;
    return {
      server,
      tools,
      connect: async (transport) => {
        const listens = followListens(store, config.namespace, () => server);
        const inbound = withInbound(transport, (message) => {
          clientName = clientNameIn(message) ?? clientName;
          return listens.inbound(message);
        });
        const entry = serveStdio(() => server, { transport: inbound, onerror: () => {} });
        ended.push(async () => {
          listens.stop();
          await entry.close();
        });
      },
      close: async () => {
        for (const end of ended.splice(0)) await end().catch(() => {});
        await close();
        if (owned) await store.close();
      },
    };
  } catch (error) {
    if (owned) await store.close().catch(() => {});
    throw error;
  }
}
