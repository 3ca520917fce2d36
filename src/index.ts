// The package's public entry: openBlackboard, openStore, createBlackboardServer, BlackboardError and the types they use.
import type {
  Blackboard,
  BlackboardOptions,
  BlackboardServer,
  BlackboardServerOptions,
  BlackboardStore,
  StoreOptions,
} from './api/index.js';
import { openBlackboard as open } from './library/blackboard.js';
import { openStore as openShared } from './library/options.js';
import { createBlackboardServer as createMcp } from './library/server.js';

// Each value is declared with the public types only, so the published declarations are this file, src/api/ and
// errors.ts, and nothing of the implementation.

export type * from './api/index.js';
export { BlackboardError, type ErrorCode } from './errors.js';

/**
 * Opens a blackboard: the tools' operations for code, with the same rules, guarantees and error codes.
 *
 * ```ts
 * const bb = await openBlackboard({ store: 'sqlite:///var/lib/board.db', agent: 'orchestrator' });
 * const { version } = await bb.kv.set({ key: 'goal', value: 'ship it', ifVersion: 0 });
 * for await (const change of bb.changes({ afterRevision: 0 })) console.log(change);
 * await bb.close();
 * ```
 *
 * Throws {@link BlackboardError} (INVALID_ARGUMENT for a bad option, STORE_UNAVAILABLE when the store cannot be opened).
 */
export const openBlackboard: (options?: BlackboardOptions) => Promise<Blackboard> = open;

/**
 * Opens one connection to a store to share between several blackboards and servers of this process
 * (`openBlackboard({ store: handle })`); the caller closes it. Without a URL: the SQLite file in the user's data
 * directory, as for the command.
 */
export const openStore: (url?: string, options?: StoreOptions) => Promise<BlackboardStore> = openShared;

/**
 * An MCP server — the one `mcp-blackboard` serves — to connect in-process, e.g. for an agent framework that takes an
 * MCP client: `const [client, server] = InMemoryTransport.createLinkedPair(); await bb.connect(server)`.
 */
export const createBlackboardServer: (options?: BlackboardServerOptions) => Promise<BlackboardServer> = createMcp;
