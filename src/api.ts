// The library's public types: what `openBlackboard`, `openStore` and `createBlackboardServer` take and give (self-contained).
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';

// This module imports nothing of the project: its declarations are published as they are, and the implementation
// (src/library/) is checked against them by the compiler.

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
  /** Closes the connection; blackboards and servers over it stop working. */
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
  /** completed and abandoned plans expire after this many seconds (default 604800) */
  planTtlSeconds?: number;
  /** checkpoints kept per thread (default 20) */
  keepCheckpoints?: number;
}

/** The tool families a server can offer. */
export type ToolFamily = 'kv' | 'plan' | 'scratchpad' | 'finalizer' | 'budget' | 'lifecycle' | 'run' | 'checkpoint' | 'history' | 'signal';

/** What `createBlackboardServer` takes: a blackboard's options plus what only an MCP server has. */
export interface BlackboardServerOptions extends BlackboardOptions {
  /** the tool families to register (default all) */
  tools?: ToolFamily[];
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

// --- kv -------------------------------------------------------------------------------------------------------

/** `state_get`: a key of a scope (`global`, `thread`, `run`, `agent`, `agent_type`, … default `global`). */
export interface GetArgs {
  key: string;
  scope?: string;
}
/** A key as read; `found: false` when absent. */
export interface GetResult {
  found: boolean;
  value?: Json;
  version?: number;
  updatedAt?: string;
  updatedBy?: string;
}
/** `state_set`; `ifVersion` makes it conditional (0: the key must not exist). */
export interface SetArgs {
  key: string;
  value: Json;
  scope?: string;
  ifVersion?: number;
  ttlSeconds?: number;
  idempotencyKey?: string;
}
/** A write's new version, and the store revision it committed at. */
export interface SetResult {
  version: number;
  revision: number;
}
/** `state_delete`. */
export interface DeleteArgs {
  key: string;
  scope?: string;
  ifVersion?: number;
  idempotencyKey?: string;
}
/** `deleted: false` when the key was absent. */
export interface DeleteResult {
  deleted: boolean;
  revision: number;
}
/** `state_list`: keys in order; pass `nextCursor` back as `cursor`. */
export interface ListArgs {
  scope?: string;
  prefix?: string;
  cursor?: string;
  limit?: number;
}
/** One page of keys with their versions (no values). */
export interface ListResult {
  keys: Array<{ key: string; version: number; updatedAt: string }>;
  nextCursor?: string;
}
/** `state_snapshot`: many values in one consistent read, at most `maxBytes`. */
export interface SnapshotArgs {
  scope?: string;
  prefix?: string;
  maxBytes?: number;
}
/** Values by key, the revision read at, and whether `maxBytes` cut it short. */
export interface SnapshotResult {
  entries: Record<string, Json>;
  revision: number;
  truncated: boolean;
}
/** The atomic operations of `state_update`. */
export type UpdateOp = 'increment' | 'append' | 'merge' | 'add_to_set';
/** `state_update`: an atomic change, safe with many writers. */
export interface UpdateArgs {
  key: string;
  op: UpdateOp;
  value: Json;
  scope?: string;
  ifVersion?: number;
  ttlSeconds?: number;
  idempotencyKey?: string;
}
/** The value after the change. */
export interface UpdateResult {
  value: Json;
  version: number;
  revision: number;
}
/** One write of a `state_batch`. */
export interface BatchOp {
  op: 'set' | 'delete' | UpdateOp;
  key: string;
  value?: Json;
  scope?: string;
  ifVersion?: number;
  ttlSeconds?: number;
}
/** `state_batch`: up to 100 writes, all or none (`atomic: false`: each alone). */
export interface BatchArgs {
  ops: BatchOp[];
  atomic?: boolean;
  idempotencyKey?: string;
}
/** The outcome of one write of a batch. */
export interface BatchSlot {
  key: string;
  ok: boolean;
  version?: number;
  value?: Json;
  deleted?: boolean;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}
/** Each write's outcome, in order. */
export interface BatchResult {
  results: BatchSlot[];
  revision: number;
}
/** `watch`: wait until a key exists or, with `afterVersion`, its version differs. Scope `plan` watches a plan. */
export interface WatchArgs {
  key: string;
  scope?: string;
  afterVersion?: number;
  timeoutMs?: number;
}
/** The key when it changed, or `timedOut: true`. */
export interface WatchResult {
  found: boolean;
  value?: Json;
  version?: number;
  timedOut: boolean;
}
/** `state_changes`: the changes after a revision (scope `plan`: plans). */
export interface ChangesArgs {
  afterRevision?: number;
  scope?: string;
  prefix?: string;
  limit?: number;
  waitMs?: number;
}
/** One change of the feed. */
export interface Change {
  scope: string;
  key: string;
  version: number;
  revision: number;
  deleted: boolean;
}
/** A page of changes; pass `revision` back as `afterRevision`. */
export interface ChangesResult {
  changes: Change[];
  revision: number;
}
/** What `Blackboard.changes` follows: without `afterRevision`, the changes from now on. */
export interface FollowArgs {
  afterRevision?: number;
  scope?: string;
  prefix?: string;
}

/** Scoped, versioned key-value state: the `state_*` tools and `watch`. */
export interface KvApi {
  /** `state_get` */
  get: (args: GetArgs) => Promise<GetResult>;
  /** `state_set`; VERSION_CONFLICT when `ifVersion` does not match */
  set: (args: SetArgs) => Promise<SetResult>;
  /** `state_delete` */
  delete: (args: DeleteArgs) => Promise<DeleteResult>;
  /** `state_list` */
  list: (args?: ListArgs) => Promise<ListResult>;
  /** `state_snapshot` */
  snapshot: (args?: SnapshotArgs) => Promise<SnapshotResult>;
  /** `state_update` */
  update: (args: UpdateArgs) => Promise<UpdateResult>;
  /** `state_batch` */
  batch: (args: BatchArgs) => Promise<BatchResult>;
  /** `watch`: blocks up to `timeoutMs` (default 30 s) */
  watch: (args: WatchArgs, options?: CallOptions) => Promise<WatchResult>;
  /** `state_changes`: one page (see {@link Blackboard.changes} to follow the feed) */
  changes: (args?: ChangesArgs, options?: CallOptions) => Promise<ChangesResult>;
}

// --- plans ----------------------------------------------------------------------------------------------------

/** A plan's status. */
export type PlanStatus = 'active' | 'completed' | 'abandoned';
/** A step's status. */
export type StepStatus = 'pending' | 'in_progress' | 'completed' | 'blocked' | 'skipped';
/** One step of a plan. */
export interface Step {
  id: string;
  content: string;
  status: StepStatus;
  owner?: string;
  blockedBy?: string[];
  note?: string;
}
/** A plan: a title, a status and ordered steps with stable ids. */
export interface Plan {
  planId: string;
  title: string;
  status: PlanStatus;
  scope: string;
  steps: Step[];
  version: number;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
}
/** A new step: its text, or the text with an owner, the step ids it waits for and a note. */
export type NewStep = string | { content: string; owner?: string; blockedBy?: string[]; note?: string };
/** `plan_create`; steps get ids `s1`, `s2`, …. */
export interface PlanCreateArgs {
  title: string;
  steps: NewStep[];
  scope?: string;
  idempotencyKey?: string;
}
/** `plan_list`, latest first. */
export interface PlanListArgs {
  status?: PlanStatus;
  scope?: string;
  limit?: number;
}
/** A plan as listed: without steps, with counts. */
export type PlanSummary = Omit<Plan, 'steps'> & { stepCount: number; doneCount: number };
/** `plan_update`: title, status, the step list, or single steps (`null` clears a field). */
export interface PlanUpdateArgs {
  planId: string;
  ifVersion?: number;
  title?: string;
  status?: PlanStatus;
  steps?: Array<string | { id?: string; content: string; status?: StepStatus; owner?: string; blockedBy?: string[]; note?: string }>;
  stepUpdates?: Array<{ id: string; content?: string; status?: StepStatus; owner?: string | null; blockedBy?: string[] | null; note?: string | null }>;
  idempotencyKey?: string;
}
/** `plan_claim`: the named step, or the next free one whose blockers are done. */
export interface PlanClaimArgs {
  planId: string;
  stepId?: string;
  owner?: string;
  idempotencyKey?: string;
}
/** Why a claim took nothing. */
export type ClaimReason = 'all_done' | 'all_blocked' | 'all_taken' | 'taken';
/** The step taken, or `claimed: false` and why. */
export interface PlanClaimResult {
  claimed: boolean;
  step?: Step;
  reason?: ClaimReason;
}

/** Plans with claims: the `plan_*` tools. Watch a plan with `kv.watch({key: planId, scope: 'plan'})`. */
export interface PlansApi {
  /** `plan_create` */
  create: (args: PlanCreateArgs) => Promise<{ planId: string; plan: Plan }>;
  /** `plan_get` */
  get: (args: { planId: string }) => Promise<{ plan: Plan }>;
  /** `plan_list` */
  list: (args?: PlanListArgs) => Promise<{ plans: PlanSummary[]; truncated: boolean }>;
  /** `plan_update` */
  update: (args: PlanUpdateArgs) => Promise<{ plan: Plan }>;
  /** `plan_claim`: atomic; two claimers never get one step */
  claim: (args: PlanClaimArgs) => Promise<PlanClaimResult>;
  /** `plan_delete` */
  delete: (args: { planId: string; ifVersion?: number; idempotencyKey?: string }) => Promise<{ deleted: boolean }>;
}

// --- scratchpad, finalizer, budgets, lifecycle, runs ---------------------------------------------------------------

/** This run's working memory. */
export interface Scratchpad {
  variables: Record<string, Json>;
  observations: string[];
  failedApproaches: Array<{ approach: string; reason?: string }>;
  /** a compact text of it for a prompt */
  context: string;
}
/** The run's scratchpad: the `scratchpad_*` tools. */
export interface ScratchpadApi {
  /** `scratchpad_store` */
  store: (args: { name: string; value: Json; idempotencyKey?: string }) => Promise<{ name: string; variables: number }>;
  /** `scratchpad_observe` */
  observe: (args: { observation: string; idempotencyKey?: string }) => Promise<{ observations: number }>;
  /** `scratchpad_fail` */
  fail: (args: { approach: string; reason?: string; idempotencyKey?: string }) => Promise<{ failedApproaches: number }>;
  /** `scratchpad_read` */
  read: () => Promise<Scratchpad>;
  /** `scratchpad_clear` */
  clear: (args?: { idempotencyKey?: string }) => Promise<{ cleared: boolean }>;
}

/** A run's final answer. */
export interface FinalAnswer {
  content: string;
  metadata?: Json;
  thread: string;
  run: string;
  setAt: string;
  setBy: string;
}
/** The final answer: `final_answer_set` and `final_answer_get`. */
export interface FinalAnswerApi {
  /** `final_answer_set`: once per run (MULTIPLE_FINAL_ANSWERS after that) */
  set: (args: { content: string; metadata?: Json; idempotencyKey?: string }) => Promise<{ answer: FinalAnswer }>;
  /** `final_answer_get`: this run's, or a (delegated) thread's; `waitMs` waits for it */
  get: (args?: { thread?: string; waitMs?: number }, options?: CallOptions) => Promise<{ isSet: boolean; answer?: FinalAnswer; timedOut?: boolean }>;
}

/** One budget of a thread. */
export interface Budget {
  name: string;
  current: number;
  max: number;
  remaining: number;
  reached: boolean;
}
/** Budgets: the `budget_*` tools (configure and increase are the operator's, always available to code). */
export interface BudgetsApi {
  /** `budget_status` */
  status: () => Promise<{ budgets: Budget[] }>;
  /** `budget_step`: spends (parents' too); LIMIT_REACHED spends nothing */
  step: (args?: { name?: string; amount?: number; idempotencyKey?: string }) => Promise<Budget>;
  /** `budget_configure`: sets a thread's stored max */
  configure: (args: { name: string; max: number; thread?: string; idempotencyKey?: string }) => Promise<Budget>;
  /** `budget_increase`: raises a thread's stored max */
  increase: (args: { name: string; amount: number; thread?: string; idempotencyKey?: string }) => Promise<Budget>;
}

/** A run's lifecycle state. */
export type AgentState = 'loading' | 'running' | 'paused' | 'awaiting_user_input' | 'finished' | 'error' | 'stopped';
/** A lifecycle as read: the state and the states allowed next. */
export interface Lifecycle {
  thread: string;
  run: string;
  state: AgentState;
  reason?: string;
  updatedAt?: string;
  allowed: AgentState[];
}
/** The lifecycle: `agent_state_get` and `agent_state_set`. */
export interface LifecycleApi {
  /** `agent_state_get` */
  get: (args?: { thread?: string }) => Promise<Lifecycle>;
  /** `agent_state_set`; INVALID_TRANSITION lists the allowed states */
  set: (args: { state: AgentState; reason?: string; idempotencyKey?: string }) => Promise<Lifecycle & { previous: AgentState }>;
}

/** How a run ends. */
export type EndState = 'finished' | 'error' | 'stopped';
/** Runs: `run_start` and `run_end`. */
export interface RunsApi {
  /** `run_start`: a new run (optionally of another thread); this blackboard serves it from now on */
  start: (args?: { thread?: string; parentThread?: string; agentType?: string; idempotencyKey?: string }) => Promise<{ thread: string; run: string; resumed: boolean }>;
  /** `run_end`: also saves a checkpoint */
  end: (args: { status: EndState; reason?: string; idempotencyKey?: string }) => Promise<{ thread: string; run: string; state: AgentState; checkpointId?: string }>;
}

/** This blackboard's identity (`whoami`). */
export interface WhoAmI {
  namespace: string | null;
  agent: string | null;
  agentType: string | null;
  thread: string;
  run: string;
  parentThread: string | null;
  delegateLevel: number;
  store: string;
}

// --- history, signals, checkpoints, bundles ---------------------------------------------------------------------

/** One event of a thread's history. */
export interface HistoryEntry {
  seq: number;
  kind: string;
  content: string;
  data?: Json;
  at: string;
  by: string;
}
/** The thread's history: the `history_*` tools. */
export interface HistoryApi {
  /** `history_append` */
  append: (args: { kind: string; content: string; data?: Json; idempotencyKey?: string }) => Promise<{ seq: number }>;
  /** `history_list`; pass `nextAfterSeq` back as `afterSeq` */
  list: (args?: { afterSeq?: number; limit?: number; kind?: string }) => Promise<{ entries: HistoryEntry[]; nextAfterSeq?: number }>;
  /** `history_prune` */
  prune: (args: { keepLast: number; idempotencyKey?: string }) => Promise<{ removed: number }>;
}

/** How an agent is doing. */
export type SignalKind = 'uncertain' | 'explore' | 'commit';
/** A signal as recorded in history. */
export interface SignalEvent {
  seq: number;
  kind: SignalKind;
  confidence?: number;
  note?: string;
  thread: string;
  run: string;
  agent: string | null;
}

/** A saved checkpoint. */
export interface CheckpointInfo {
  checkpointId: string;
  thread: string;
  run: string;
  label?: string;
  createdAt: string;
  /** the thread's revision when saved: pass it as `ifRevision` to restore only if nothing changed since */
  revision: number;
  records: number;
  bytes: number;
}
/** Checkpoints: the `checkpoint_*` tools. */
export interface CheckpointsApi {
  /** `checkpoint_save` */
  save: (args?: { label?: string; idempotencyKey?: string }) => Promise<CheckpointInfo>;
  /** `checkpoint_list`, newest first */
  list: (args?: { thread?: string }) => Promise<{ checkpoints: CheckpointInfo[] }>;
  /** `checkpoint_restore`: atomically */
  restore: (args: { checkpointId: string; ifRevision?: number; idempotencyKey?: string }) => Promise<{ checkpointId: string; thread: string; run: string; records: number }>;
  /** `checkpoint_delete` */
  delete: (args: { checkpointId: string; idempotencyKey?: string }) => Promise<{ deleted: boolean }>;
}

/** One record of a bundle, as stored: value, version, time (epoch ms), author, expiry. */
export interface BundleRecord {
  v: Json;
  ver: number;
  at: number;
  by: string;
  exp?: number;
}
/** A bundle: a thread's or a namespace's state as versioned JSON (what `mcp-blackboard export` writes). */
export type Bundle =
  | { format: number; kind: 'thread'; thread: string; run: string; records: Record<string, BundleRecord> }
  | { format: number; kind: 'namespace'; records: Record<string, BundleRecord> };
/** Bundles: the `export` and `import` commands. */
export interface BundlesApi {
  /** A thread's state (or, without `thread`, the whole namespace's). */
  export: (args?: { thread?: string }) => Promise<Bundle>;
  /** Loads a bundle (object or JSON text); the whole bundle is checked first, a corrupt one changes nothing. */
  import: (bundle: Bundle | string) => Promise<{ records: number }>;
}

/**
 * A blackboard: the tools' operations for code, with the same rules and errors (a {@link BlackboardError} with the
 * tool's `code` and `details`). Grouped by family; arguments are the tools' arguments.
 */
export interface Blackboard {
  /** scoped, versioned key-value state */
  readonly kv: KvApi;
  /** plans and claims */
  readonly plans: PlansApi;
  /** the run's working memory */
  readonly scratchpad: ScratchpadApi;
  /** the run's final answer */
  readonly finalAnswer: FinalAnswerApi;
  /** the thread's budgets */
  readonly budgets: BudgetsApi;
  /** the run's lifecycle state */
  readonly lifecycle: LifecycleApi;
  /** runs of the thread */
  readonly runs: RunsApi;
  /** the thread's history */
  readonly history: HistoryApi;
  /** checkpoints of the thread */
  readonly checkpoints: CheckpointsApi;
  /** export and import */
  readonly bundles: BundlesApi;
  /** `whoami`: this blackboard's identity */
  whoami(): Promise<WhoAmI>;
  /** `signal`: recorded in the thread's history */
  signal(args: { kind: SignalKind; confidence?: number; note?: string; idempotencyKey?: string }): Promise<SignalEvent>;
  /**
   * Follows the change feed: every change after `afterRevision` (default: from now on), oldest first, never missing
   * or repeating one, waiting for new ones until the loop stops or `signal` aborts. REVISION_COMPACTED when
   * `afterRevision` is older than the feed keeps.
   */
  changes(args?: FollowArgs, options?: CallOptions): AsyncIterable<Change>;
  /**
   * Another identity over the same store connection, with this blackboard's other options (budgets, …): the
   * namespace stays unless given; agent, agent type, thread (default: a new one) and parent thread are the given
   * ones. Closed with this blackboard; closing it leaves the store open.
   */
  as(identity: Identity): Promise<Blackboard>;
  /** Ends waits in progress and closes the store when this blackboard opened it from a URL. */
  close(): Promise<void>;
}
