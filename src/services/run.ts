// The run service: who this connection is, starting a run and ending one.
import { checkName, idempotent, type CallOptions, resolveScope } from '../context.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import { BlackboardError } from '../errors.js';
import type { HistoryService } from './history.js';
import type { AgentState, LifecycleService } from './lifecycle.js';
import type { ScratchpadService } from './scratchpad.js';
import { checkThreadWrite } from './ownership.js';
import type { Session } from './session.js';
import { expireReplacedRunPlans } from './run-plans.js';
import { checkParent, threadInfoOf } from './thread-info.js';

export interface WhoAmI {
  namespace: string | null;
  agent: string | null;
  agentType: string | null;
  thread: string;
  run: string;
  parentThread: string | null;
  delegateLevel: number;
}

export const END_STATES = ['finished', 'error', 'stopped'] as const;
export type EndState = (typeof END_STATES)[number];

/** Hook run_end calls inside its transaction to save a checkpoint of the thread, when checkpoints are enabled. */
export type OnRunEnd = (tx: StoreTx, status: EndState) => Promise<string | undefined>;

/** Identity and runs: who this connection is, starting a fresh run, ending one. */
export class RunService {
  onRunEnd?: OnRunEnd;

  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly lifecycle: LifecycleService,
    private readonly scratchpad: ScratchpadService,
    private readonly history: HistoryService,
    /** how long a replaced run's plans are kept */
    private readonly planTtlMs: number,
  ) {}

  async whoami(): Promise<WhoAmI> {
    await this.session.refresh();
    const who = this.session.identity;
    return {
      namespace: who.namespace ?? null,
      agent: who.agent ?? null,
      agentType: who.agentType ?? null,
      thread: who.thread,
      run: who.run,
      parentThread: who.parentThread ?? null,
      delegateLevel: who.delegateLevel,
    };
  }

  /**
   * Begins a new run of this thread (or of `thread`, switching to it): a new run id; the thread's previous run scope
   * and scratchpad are gone, its final answer is no longer this run's (others read it until the new run answers),
   * its plans expire after the plan TTL, its lifecycle is back to `loading`;
   * thread state is kept. Every connection serving the thread follows. One transaction, so a retry with the same
   * `idempotencyKey` starts nothing new.
   */
  async start(
    args: { thread?: string; parentThread?: string; agentType?: string; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<{ thread: string; run: string; resumed: boolean }> {
    if (args.agentType !== undefined) checkName('agent type', args.agentType, 'agentType');
    await this.session.refresh();
    const who = this.session.identity;
    if (args.agentType !== undefined && this.session.agentTypeFixed && args.agentType !== who.agentType) {
      throw new BlackboardError(
        'FORBIDDEN',
        `This client's agent type is "${who.agentType}", fixed by the server's configuration; it cannot act as "${args.agentType}". Nothing was changed. Call {tool:run_start} without agentType.`,
        { path: 'agentType', agentType: who.agentType },
      );
    }
    const thread = args.thread ?? who.thread;
    const above = await this.session.ancestors();
    const { result } = await this.store.transact(
      async (tx) => {
        let parentThread = args.parentThread;
        if (parentThread !== undefined)
          await checkParent(
            (key) => tx.get(key),
            (t) => this.session.threadKey(t),
            thread,
            parentThread,
          );
        if (parentThread !== undefined && parentThread !== who.thread && !above.includes(parentThread)) {
          // A named parent must be a thread that exists and that this agent may write into: a made-up parent would
          // start a new tree without the budgets of this one.
          const parent = threadInfoOf((await tx.get(this.session.threadKey(parentThread)))?.value);
          if (parent === undefined) {
            throw new BlackboardError(
              'NOT_FOUND',
              `There is no thread "${parentThread}" to be the parent: nothing was changed. Leave parentThread out to start ${thread === who.thread ? 'this run' : `thread ${thread}`} under your own thread.`,
              { parentThread },
            );
          }
          await checkThreadWrite(this.session, (key) => tx.get(key), parentThread);
          // ... and in this thread's own tree: a parent in another tree would leave the budgets above this one behind
          if (parent.root !== who.rootThread) {
            throw new BlackboardError(
              'FORBIDDEN',
              `Thread "${parentThread}" is in another delegation tree (its root is ${parent.root}, yours is ${who.rootThread}): a thread started under it would leave your budgets behind. Nothing was changed. Name a thread of your own tree, or leave parentThread out.`,
              { parentThread, root: parent.root },
            );
          }
        }
        if (thread !== who.thread) {
          await checkThreadWrite(this.session, (key) => tx.get(key), thread);
          // A thread entered from here that has no parent becomes this thread's child: its steps charge our budgets.
          const known = threadInfoOf((await tx.get(this.session.threadKey(thread)))?.value);
          if (parentThread === undefined && known?.parent === undefined && !above.includes(thread)) parentThread = who.thread;
        }
        const { before, next } = await this.session.enterThreadIn(tx, thread, parentThread, true);
        if (before.run !== undefined) {
          const oldScope = resolveScope('run', { ...who, thread, run: before.run }).id;
          const old = this.session.keys.dataRange(oldScope);
          await tx.deleteRange(old.lo, old.hi);
          await tx.delete(this.scratchpad.key(thread, before.run));
          await expireReplacedRunPlans(tx, this.session.keys, oldScope, this.planTtlMs, this.session.by);
        }
        await this.lifecycle.resetIn(tx, thread, next.run!);
        return { thread, run: next.run!, resumed: before.runs > 0, info: next };
      },
      // kept in the thread the run starts in, where the retry of a call that switched threads comes from; the thread
      // is spelled out, so naming the caller's own thread is the same call as leaving it out
      { ...idempotent(who, call, { ...args, thread }, thread) },
    );
    this.session.adopt(result.thread, result.info);
    await this.session.refreshAfterWrite(); // after a replayed retry, the thread may have moved on to a newer run
    if (args.agentType !== undefined) this.session.identity = { ...this.session.identity, agentType: args.agentType };
    return { thread: result.thread, run: result.run, resumed: result.resumed };
  }

  /**
   * Ends this run in `status`, in one transaction: the lifecycle, a `run_end` history event, and a checkpoint of the
   * thread when checkpoints are enabled.
   */
  async end(
    args: { status: EndState; reason?: string; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<{ thread: string; run: string; state: AgentState; checkpointId?: string }> {
    if (!(END_STATES as readonly string[]).includes(args.status)) {
      throw new BlackboardError('INVALID_ARGUMENT', `status must be one of: ${END_STATES.join(', ')}.`, { path: 'status' });
    }
    await this.session.refresh();
    const who = this.session.identity;
    const { result } = await this.store.transact(
      async (tx) => {
        await this.lifecycle.endIn(tx, who, args.status, args.reason);
        await this.history.appendIn(tx, {
          kind: 'run_end',
          content: args.status,
          data: { run: who.run, ...(args.reason ? { reason: args.reason } : {}) },
        });
        const checkpointId = await this.onRunEnd?.(tx, args.status);
        return { thread: who.thread, run: who.run, state: args.status as AgentState, ...(checkpointId ? { checkpointId } : {}) };
      },
      { ...idempotent(who, call, args) },
    );
    return result;
  }
}
