// One connection to a shared store: its session, its services, and what runs before its writes (MCP server and library alike).
import type { Config } from './config.js';
import type { BlackboardError } from './errors.js';
import { createServices, type Services } from './services/index.js';
import { Session, type SessionOptions } from './services/session.js';
import type { VersionedStore } from './store/versioned-store.js';

/** A connection's session and services over the store; every way in (an MCP server, the library) opens one. */
export interface Connection {
  session: Session;
  services: Services;
  /** Run before every write: records the thread of a session opened with `recordOnWrite`, fixes its budgets. */
  beforeWrite(): Promise<void>;
  /**
   * Run after every call that succeeded, reads included: the caller's sign of life, which keeps its claims alive.
   * Returns what the reply's `_meta` carries: `unread` when the caller has unread messages.
   */
  afterCall(): Promise<{ unread: number } | undefined>;
  /** What the reply of a refused call carries in `_meta` (`unread`), read only: a failed call changes nothing. */
  afterFailure(): Promise<{ unread: number } | undefined>;
  /** the store's error, for a connection that could not be opened (see {@link unreachableConnection}) */
  down?: BlackboardError;
}

/** The config's identity flags, overridden by `identity`. */
const sessionOptions = (config: Config, identity: SessionOptions): SessionOptions => ({
  namespace: config.namespace,
  agent: config.agent,
  agentType: config.agentType,
  thread: config.thread,
  parentThread: config.parentThread,
  ...identity,
});

/**
 * Opens a connection with the config's identity, overridden by `identity`. The first connection to serve a thread
 * fixes its budget maxes: at open, or at the first write for a session that leaves nothing in the store until it
 * writes (`recordOnWrite`, HTTP). An `observer` (a client that can only read) leaves no sign of life.
 */
export async function openConnection(
  config: Config,
  store: VersionedStore,
  identity: SessionOptions = {},
  { observer = false }: { observer?: boolean } = {},
): Promise<Connection> {
  const session = await Session.open(store, sessionOptions(config, identity));
  const services = createServices(store, session, config);
  let budgetsFixed = false;
  const fixBudgets = async (): Promise<void> => {
    if (budgetsFixed || session.isVisiting) return; // another agent's thread: its budgets are its owner's
    await services.budget.adopt();
    budgetsFixed = true;
  };
  if (!identity.recordOnWrite) await fixBudgets();
  const unreadMeta = async (): Promise<{ unread: number } | undefined> => {
    const unread = await services.messages.unreadHint().catch(() => 0);
    return unread > 0 ? { unread } : undefined;
  };
  return {
    session,
    services,
    beforeWrite: async () => {
      await session.record();
      await fixBudgets();
    },
    afterCall: async () => {
      // a caller only reading another agent's thread is not in it: no roster entry there, so no mail to it there; nor
      // is a client that can only read (an observer: it could never acknowledge mail to all)
      if (!session.isVisiting && !observer) await services.presence.touch();
      return unreadMeta();
    },
    afterFailure: unreadMeta,
  };
}

/**
 * A connection for one request that could not be opened because the store is unavailable: its session made without
 * reading the store, and every call refused with `error` (STORE_UNAVAILABLE, "nothing was changed") by the server that
 * serves it. The next request opens a connection anew: a stateless server recovers by itself.
 */
export function unreachableConnection(config: Config, store: VersionedStore, identity: SessionOptions, error: BlackboardError): Connection {
  const { namespace, agent, agentType, thread = '' } = sessionOptions(config, identity);
  const session = new Session(store, {
    namespace,
    agent,
    agentType,
    thread,
    run: '',
    rootThread: '',
    delegateLevel: 0,
  });
  const none = async (): Promise<undefined> => undefined;
  return { session, services: createServices(store, session, config), beforeWrite: none, afterCall: none, afterFailure: none, down: error };
}
