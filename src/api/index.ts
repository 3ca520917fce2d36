// Public types: the Blackboard (the tools' operations for code, by family) and every type the library exposes.
import type { CallOptions, Identity } from './options.js';
import type { Change, FollowArgs, KvApi } from './kv.js';
import type { PlansApi } from './plans.js';
import type { BudgetsApi, FinalAnswerApi, LifecycleApi, RunsApi, ScratchpadApi, WhoAmI } from './runs.js';
import type { BundlesApi, CheckpointsApi, HistoryApi, SignalEvent, SignalKind } from './records.js';
import type { InboxArgs, InboxPage, Message, SendArgs, SendResult, TeamApi } from './team.js';
export type * from './options.js';
export type * from './kv.js';
export type * from './plans.js';
export type * from './runs.js';
export type * from './records.js';
export type * from './team.js';

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
  /** the roster the server keeps */
  readonly team: TeamApi;
  /** `message_send`: a durable message to an agent, `agentType:T`, `thread:ID` or `all` */
  send(args: SendArgs): Promise<SendResult>;
  /**
   * `inbox` as an iterator: this agent's messages after its acknowledged position, oldest first, waiting for more.
   * A message is acknowledged when the loop asks for the next one, so one the loop did not finish (a crash, a
   * `break` in its body) comes again on the next read: at least once, in send order per sender.
   */
  inbox(args?: InboxArgs, options?: CallOptions): AsyncIterable<Message>;
  /** `inbox` one read at a time, acknowledging with `ack: cursor` */
  readonly mail: { read(args?: InboxArgs & { ack?: string }, options?: CallOptions): Promise<InboxPage> };
  /** `whoami`: this blackboard's identity */
  whoami(): Promise<WhoAmI>;
  /** `signal`: recorded in the thread's history */
  signal(args: { kind: SignalKind; confidence?: number; note?: string; idempotencyKey?: string }): Promise<SignalEvent>;
  /**
   * Follows the change feed: every change after `afterRevision` (default: from this call on), oldest first, never missing
   * or repeating one, waiting for new ones until the loop stops or `signal` aborts. REVISION_COMPACTED when
   * `afterRevision` is older than the feed keeps.
   */
  changes(args?: FollowArgs, options?: CallOptions): AsyncIterable<Change>;
  /**
   * Another identity over the same store connection, with this blackboard's other options (budgets, …): the
   * namespace stays unless given; agent, agent type, thread (default: a new one) and parent thread are the given
   * ones. Closed with this blackboard; closing it leaves the store open. One dropped without closing (opened per
   * request, say) is let go: this blackboard does not keep it.
   */
  as(identity: Identity): Promise<Blackboard>;
  /** Ends waits in progress and closes the store when this blackboard opened it from a URL. */
  close(): Promise<void>;
}
