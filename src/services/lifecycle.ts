// The lifecycle service: each thread's agent state and the transitions allowed between states.
import { BlackboardError } from '../errors.js';
import { checkName, idempotent, truncate, type CallOptions } from '../context.js';
import * as z from 'zod';
import type { Json } from '../store/types.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import { decode, encode } from './records.js';
import { runOf } from './thread-info.js';
import type { Session } from './session.js';

export const STATES = ['loading', 'running', 'paused', 'awaiting_user_input', 'finished', 'error', 'stopped'] as const;
export type AgentState = (typeof STATES)[number];

/** The only transitions agent_state_set accepts; any other is INVALID_TRANSITION with the allowed targets. */
export const TRANSITIONS: Record<AgentState, readonly AgentState[]> = {
  loading: ['running'],
  running: ['paused', 'awaiting_user_input', 'finished', 'error', 'stopped'],
  paused: ['running', 'stopped'],
  awaiting_user_input: ['running', 'stopped'],
  error: ['running', 'stopped'],
  finished: [],
  stopped: [],
};

/** A thread's stored lifecycle: its state, the run it belongs to, and why. */
export const LifecycleRecord = z.object({
  state: z.enum(STATES),
  run: z.string(),
  reason: z.string().optional(),
  /** set by run_end, until the state changes again: a run ends once */
  ended: z.boolean().optional(),
});
type LifecycleRecord = z.infer<typeof LifecycleRecord>;
export const lifecycleOf = (value: Json | undefined): LifecycleRecord | undefined =>
  value === undefined ? undefined : decode(LifecycleRecord, value, 'lifecycle');

/** Whether `record` says that run `run` has ended: run_end ends a run once, and nothing reopens it. */
export const runEnded = (record: LifecycleRecord | undefined, run: string | undefined): boolean =>
  record?.ended === true && record.run === run;

/**
 * Whether run `run` is over as `record` says: ended by run_end, or moved to `finished`. Nothing of an over run changes
 * (its run-scope plans, a restore of its checkpoints) while it is its thread's run.
 */
export const runOver = (record: LifecycleRecord | undefined, run: string | undefined): boolean =>
  runEnded(record, run) || (record !== undefined && record.run === run && record.state === 'finished');

/** A thread and one of its runs: where a run-mutating write goes, noted once when the call begins. */
export interface RunOf {
  thread: string;
  run: string;
}

export interface LifecycleView {
  thread: string;
  run: string;
  state: AgentState;
  reason?: string;
  updatedAt?: string;
  allowed: AgentState[];
}

/**
 * One lifecycle per thread, owned by the run that last reported it. A run that has not reported yet is `loading`.
 * After `finished`, the run's mutating tools fail with RUN_FINISHED until `run_start` begins a new run.
 */
export class LifecycleService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
  ) {}

  key(thread: string): string {
    return this.session.keys.lifecycle(thread);
  }

  async get(args: { thread?: string } = {}): Promise<LifecycleView> {
    await this.session.refresh();
    const who = this.session.identity;
    const thread = args.thread === undefined ? who.thread : checkName('thread', args.thread, 'thread');
    const entry = await this.store.get(this.key(thread));
    const record = lifecycleOf(entry?.value);
    // Our own thread is seen from this run; another thread as it last reported.
    const mine = thread === who.thread;
    const current = record && (!mine || record.run === who.run) ? record : undefined;
    const state = current?.state ?? 'loading';
    return {
      thread,
      run: current?.run ?? (mine ? who.run : (record?.run ?? '')),
      state,
      ...(current?.reason !== undefined ? { reason: current.reason } : {}),
      ...(current && entry ? { updatedAt: new Date(entry.updatedAt).toISOString() } : {}),
      allowed: [...TRANSITIONS[state]],
    };
  }

  async set(
    args: { state: AgentState; reason?: string; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<LifecycleView & { previous: AgentState }> {
    await this.session.refresh();
    const who = this.session.identity;
    if (!(STATES as readonly string[]).includes(args.state)) {
      throw new BlackboardError('INVALID_ARGUMENT', `Unknown state "${truncate(String(args.state))}". States: ${STATES.join(', ')}.`, {
        path: 'state',
      });
    }
    const { result } = await this.store.transact(
      async (tx) => {
        const previous = await this.stateIn(tx, who);
        const allowed = TRANSITIONS[previous];
        if (!allowed.includes(args.state)) {
          throw new BlackboardError(
            'INVALID_TRANSITION',
            allowed.length > 0
              ? `Cannot go from ${previous} to ${args.state}. From ${previous} you can go to: ${allowed.join(', ')}.`
              : `Cannot go from ${previous} to ${args.state}: ${previous} is final for this run. Begin a new run with {tool:run_start}.`,
            { from: previous, to: args.state, allowed: [...allowed] },
          );
        }
        const record: LifecycleRecord = { state: args.state, run: who.run, ...(args.reason ? { reason: args.reason } : {}) };
        const entry = await tx.set(this.key(who.thread), encode(record), { by: this.session.by });
        return { previous, updatedAt: entry.updatedAt };
      },
      { ...idempotent(who, call, args) },
    );
    return {
      thread: who.thread,
      run: who.run,
      state: args.state,
      ...(args.reason ? { reason: args.reason } : {}),
      updatedAt: new Date(result.updatedAt).toISOString(),
      allowed: [...TRANSITIONS[args.state]],
      previous: result.previous,
    };
  }

  /**
   * Refuses (RUN_FINISHED, to retry) a write of this connection's run when another connection has moved the thread to
   * a new run since this one last looked: read inside the write's transaction, so that the write cannot land in a
   * replaced run (its scratchpad, final answer, lifecycle, budget step, run-scoped keys), where nothing would read it.
   * `at` is the thread and run the write noted when it began, and writes to: the connection's identity may move on to
   * a newer run meanwhile (another call of the same connection seeing it), and must not make the check pass for the
   * new run while the write goes to the old one.
   */
  async assertCurrentRun(tx: StoreTx, at: RunOf): Promise<void> {
    const { thread, run } = at;
    if ((await runOf(tx, this.session.keys, thread)) !== run) {
      throw new BlackboardError(
        'RUN_FINISHED',
        'That run was replaced by a new run on this thread. Retry the call: it will go to the current run.',
        { run },
      );
    }
  }

  /** The state of the run at `at`, read inside a write's transaction (after {@link assertCurrentRun}). */
  async stateIn(tx: StoreTx, who: RunOf): Promise<AgentState> {
    await this.assertCurrentRun(tx, who);
    const record = lifecycleOf((await tx.get(this.key(who.thread)))?.value);
    return record && record.run === who.run ? record.state : 'loading';
  }

  /**
   * Throws RUN_FINISHED unless the run at `at` is the thread's current one and has not finished; call inside the
   * transaction of every run-mutating tool, with the thread and run it writes to.
   */
  async assertActive(tx: StoreTx, at: RunOf): Promise<void> {
    if ((await this.stateIn(tx, at)) === 'finished') {
      throw new BlackboardError(
        'RUN_FINISHED',
        'This run has finished, so its state can no longer change: nothing was changed, and its work is over (report what you have to whoever started it). Begin a new run on this thread with {tool:run_start}.',
        { run: at.run },
      );
    }
  }

  /**
   * Ends the run in `state` inside run_end's transaction. A run that never reported `running` passes through it,
   * so `run_end` works from `loading`; any other illegal transition fails like agent_state_set.
   */
  async endIn(tx: StoreTx, who: RunOf, state: AgentState, reason?: string): Promise<void> {
    await this.assertCurrentRun(tx, who);
    const record = lifecycleOf((await tx.get(this.key(who.thread)))?.value);
    const current = record && record.run === who.run ? record.state : 'loading';
    if (runEnded(record, who.run)) {
      throw new BlackboardError(
        'INVALID_TRANSITION',
        `This run already ended as ${current} with {tool:run_end}; it ends once. Nothing was changed. Begin a new run with {tool:run_start}.`,
        { from: current, to: state, allowed: [...TRANSITIONS[current]] },
      );
    }
    const from = current === 'loading' ? 'running' : current;
    if (from !== state && !TRANSITIONS[from].includes(state)) {
      throw new BlackboardError(
        'INVALID_TRANSITION',
        `Cannot end the run as ${state} from ${current}. From ${current} you can go to: ${TRANSITIONS[current].join(', ') || 'nothing. Begin a new run with {tool:run_start}'}.`,
        { from: current, to: state, allowed: [...TRANSITIONS[current]] },
      );
    }
    const ended: LifecycleRecord = { state, run: who.run, ...(reason ? { reason } : {}), ended: true };
    await tx.set(this.key(who.thread), encode(ended), { by: this.session.by });
  }

  /** Starts the lifecycle of a new run (inside run_start's transaction). */
  async resetIn(tx: StoreTx, thread: string, run: string): Promise<void> {
    await tx.set(this.key(thread), encode<LifecycleRecord>({ state: 'loading', run }), { by: this.session.by });
  }
}
