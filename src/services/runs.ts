import { checkName, dataRange, resolveScope } from '../context.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { BlackboardError } from '../errors.js';
import type { HistoryService } from './history.js';
import type { AgentState, LifecycleService } from './lifecycle.js';
import type { ScratchpadService } from './scratchpad.js';
import type { Session } from './session.js';

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

export const END_STATES = ['finished', 'error', 'stopped'] as const;
export type EndState = (typeof END_STATES)[number];

/** Hook run_end calls to save a checkpoint of the thread, when checkpoints are enabled. */
export type OnRunEnd = (status: EndState) => Promise<string | undefined>;

/** Identity and runs: who this connection is, starting a fresh run, ending one. */
export class RunService {
  onRunEnd?: OnRunEnd;

  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly lifecycle: LifecycleService,
    private readonly scratchpad: ScratchpadService,
    private readonly history: HistoryService,
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
      store: this.store.backend.description,
    };
  }

  /**
   * Begins a new run: a new run id, an empty run scope, scratchpad and finalizer, lifecycle back to `loading`;
   * thread state is kept. Optionally switches thread (and records its parent) or agent type.
   */
  async start(args: { thread?: string; parentThread?: string; agentType?: string }): Promise<{ thread: string; run: string; resumed: boolean }> {
    if (args.agentType !== undefined) checkName('agent type', args.agentType);
    await this.session.refresh();
    const before = this.session.identity;
    const oldRunScope = dataRange(before, resolveScope('run', before), '');
    const oldScratchpad = this.scratchpad.key(before.thread, before.run);
    const info = await this.session.enterThread(args.thread ?? before.thread, args.parentThread, true);
    if (args.agentType !== undefined) this.session.identity = { ...this.session.identity, agentType: args.agentType };
    await this.store.transact(async (tx) => {
      await tx.deleteRange(oldRunScope.lo, oldRunScope.hi);
      await tx.delete(oldScratchpad);
      await this.lifecycle.resetIn(tx);
      return {};
    });
    const who = this.session.identity;
    return { thread: who.thread, run: who.run, resumed: info.runs > 0 };
  }

  /** Ends this run in `status` (recorded in lifecycle and history) and saves a checkpoint when checkpoints are on. */
  async end(args: { status: EndState; reason?: string }): Promise<{ thread: string; run: string; state: AgentState; checkpointId?: string }> {
    if (!(END_STATES as readonly string[]).includes(args.status)) {
      throw new BlackboardError('INVALID_ARGUMENT', `status must be one of: ${END_STATES.join(', ')}.`);
    }
    await this.session.refresh();
    const who = this.session.identity;
    await this.store.transact(async (tx) => {
      await this.lifecycle.endIn(tx, args.status, args.reason);
      await this.history.appendIn(tx, { kind: 'run_end', content: args.status, data: { run: who.run, ...(args.reason ? { reason: args.reason } : {}) } });
      return {};
    });
    const checkpointId = await this.onRunEnd?.(args.status);
    return { thread: who.thread, run: who.run, state: args.status, ...(checkpointId ? { checkpointId } : {}) };
  }
}
