// Public types: what the library's entry points take (identity, store, options) and the in-process server they give.
import type { McpServer, Transport } from '@modelcontextprotocol/server';

// The modules of src/api/ import nothing of the project: their declarations are published as they are, and the
// implementation (src/library/) is checked against them by the compiler.

/** Any JSON value, as stored and returned. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Options of a call that can wait: an `AbortSignal` ends the wait early (the call then rejects). */
export interface CallOptions {
  signal?: AbortSignal;
}

/** How to reach a store: limits that apply to a store this process opens. */
export interface StoreOptions {
  /** largest value accepted, in UTF-8 JSON bytes (default 1 MiB) */
  maxValueBytes?: number;
  /** SQLite durability: `FULL` (default) fsyncs every commit, `NORMAL` survives crashes but not power loss */
  sync?: 'FULL' | 'NORMAL';
  /** how long the change feed can look back, in seconds (default 86400) */
  changeRetentionSeconds?: number;
}

/**
 * An open connection to a store (`sqlite://`, `postgres://`, `redis://`, `memory://`), to share between several
 * blackboards and servers of one process. Whoever opened it closes it.
 */
export interface BlackboardStore {
  /** where the data lives, password masked, e.g. `sqlite:///var/lib/board.db` */
  readonly description: string;
  /** Closes the connection; blackboards and servers over it stop working (waits end, calls fail: STORE_UNAVAILABLE). */
  close(): Promise<void>;
}

/** Who is calling: the same identity a server takes from `--namespace`, `--agent`, `--thread`, …. */
export interface Identity {
  /** partitions the store (`^[a-z][a-z0-9_]{0,31}$`); default none */
  namespace?: string;
  /** this agent's name, recorded as `updatedBy` and used as claim owner */
  agent?: string;
  /** this agent's type (scope `agent_type`) */
  agentType?: string;
  /** the conversation thread (default: a new id) */
  thread?: string;
  /** the thread that delegated to this one */
  parentThread?: string;
}

/** What `openBlackboard` and `createBlackboardServer` take. */
export interface BlackboardOptions extends Identity, StoreOptions {
  /**
   * A store URL (opened here and closed by `close()`), or a {@link BlackboardStore} from `openStore` (shared; left
   * open). Default: the SQLite file in the user's data directory, as for the command.
   */
  store?: string | BlackboardStore;
  /** the `iterations` budget per thread */
  maxIterations?: number;
  /** other budgets per thread, by name */
  budgets?: Record<string, number>;
  /** completed and abandoned plans, and those of a run another replaced, expire after this many seconds (default 604800) */
  planTtlSeconds?: number;
  /** checkpoints kept per thread (default 20) */
  keepCheckpoints?: number;
  /** a plan step claim lapses this many seconds after its holder's last call (default 600) */
  claimLeaseSeconds?: number;
  /** the team roster lists agents seen within this many seconds (default 3600) */
  rosterWindowSeconds?: number;
  /** messages expire after this many seconds (default 604800) */
  messageRetentionSeconds?: number;
}

/** The tool families a server can offer. */
export type ToolFamily =
  | 'kv'
  | 'plan'
  | 'scratchpad'
  | 'finalizer'
  | 'budget'
  | 'lifecycle'
  | 'run'
  | 'checkpoint'
  | 'history'
  | 'signal'
  | 'team';
/** The tool profiles: `agent` (the default), `planner`, `follow`, `history`, `operator`, `team`, `all`. */
export type ToolProfile = 'agent' | 'planner' | 'follow' | 'history' | 'operator' | 'team' | 'all';

/** What `createBlackboardServer` takes: a blackboard's options plus what only an MCP server has. */
export interface BlackboardServerOptions extends BlackboardOptions {
  /** the tools to register, as `--tools` takes them: profiles, families or tool names (default the `agent` profile) */
  tools?: Array<ToolProfile | ToolFamily | (string & {})>;
  /** register `budget_configure` and `budget_increase` (default false) */
  allowBudgetAdmin?: boolean;
  /** every tool that writes fails with FORBIDDEN */
  readOnly?: boolean;
  /** how often blocking tools send progress notifications when asked to (ms, default 10000) */
  progressIntervalMs?: number;
}

/** An MCP server (the one the command serves) for one connection, to connect in-process. */
export interface BlackboardServer {
  /** the SDK server, for what {@link connect} does not cover */
  readonly server: McpServer;
  /** the tool names it registered */
  readonly tools: string[];
  /** Connects it to a transport, e.g. one end of `InMemoryTransport.createLinkedPair()`. */
  connect(transport: Transport): Promise<void>;
  /** Closes the server, and the store when it was opened from a URL. */
  close(): Promise<void>;
}
