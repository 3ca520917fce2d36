import type { Config } from '../config.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { BudgetService } from './budget.js';
import { ChangesService } from './changes.js';
import { CheckpointService } from './checkpoints.js';
import { FinalizerService } from './finalizer.js';
import { HistoryService } from './history.js';
import { KvService } from './kv.js';
import { LifecycleService } from './lifecycle.js';
import { PlanService } from './plans.js';
import { RunService } from './runs.js';
import { ScratchpadService } from './scratchpad.js';
import type { Session, ThreadInfo } from './session.js';
import type { StoreTx } from '../store/versioned-store.js';
import { BlackboardError } from '../errors.js';
import { resolveScope } from '../context.js';
import { SignalService } from './signals.js';

/** The services of one connection: plain TypeScript over the shared store and this connection's session. */
export interface Services {
  kv: KvService;
  changes: ChangesService;
  plans: PlanService;
  scratchpad: ScratchpadService;
  finalizer: FinalizerService;
  budget: BudgetService;
  lifecycle: LifecycleService;
  runs: RunService;
  history: HistoryService;
  signals: SignalService;
  checkpoints: CheckpointService;
}

export function createServices(store: VersionedStore, session: Session, config: Config): Services {
  const lifecycle = new LifecycleService(store, session);
  const plans = new PlanService(store, session, config.planTtlSeconds * 1000);
  const history = new HistoryService(store, session);
  const scratchpad = new ScratchpadService(store, session, lifecycle);
  const limits: Record<string, number> = { ...config.budgets };
  if (config.maxIterations !== undefined) limits.iterations = config.maxIterations;
  // Writes to a run scope must target the thread's current run, and are refused once that run has finished.
  const runGuard = async (scope: { id: string }, tx: StoreTx): Promise<void> => {
    if (scope.id !== resolveScope('run', session.identity).id) return;
    const current = ((await tx.get(session.threadKey(session.identity.thread)))?.value as ThreadInfo | undefined)?.run;
    if (current !== session.identity.run) {
      throw new BlackboardError('RUN_FINISHED', 'That run was replaced by run_start on this thread. Retry the call: it will go to the current run.');
    }
    await lifecycle.assertActive(tx);
  };
  const runs = new RunService(store, session, lifecycle, scratchpad, history);
  const finalizer = new FinalizerService(store, session, lifecycle);
  const budget = new BudgetService(store, session, lifecycle, limits);
  const checkpoints = new CheckpointService(store, session, { plans, scratchpad, finalizer, budget, lifecycle, history }, config.keepCheckpoints);
  if (config.tools.includes('checkpoint')) {
    runs.onRunEnd = async (tx, status) => (await checkpoints.saveIn(tx, session.identity.thread, `run_end: ${status}`)).checkpointId;
  }
  return {
    kv: new KvService(store, session, runGuard, (planId) => plans.key(planId)),
    changes: new ChangesService(store, session),
    plans,
    scratchpad,
    finalizer,
    budget,
    lifecycle,
    runs,
    history,
    signals: new SignalService(session, history),
    checkpoints,
  };
}
