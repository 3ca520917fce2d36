import type { Config } from '../config.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { BudgetService } from './budget.js';
import { FinalizerService } from './finalizer.js';
import { HistoryService } from './history.js';
import { KvService } from './kv.js';
import { LifecycleService } from './lifecycle.js';
import { PlanService } from './plans.js';
import { RunService } from './runs.js';
import { ScratchpadService } from './scratchpad.js';
import type { Session } from './session.js';
import { SignalService } from './signals.js';

/** The services of one connection: plain TypeScript over the shared store and this connection's session. */
export interface Services {
  kv: KvService;
  plans: PlanService;
  scratchpad: ScratchpadService;
  finalizer: FinalizerService;
  budget: BudgetService;
  lifecycle: LifecycleService;
  runs: RunService;
  history: HistoryService;
  signals: SignalService;
}

export function createServices(store: VersionedStore, session: Session, config: Config): Services {
  const lifecycle = new LifecycleService(store, session);
  const plans = new PlanService(store, session, config.planTtlSeconds * 1000);
  const history = new HistoryService(store, session);
  const scratchpad = new ScratchpadService(store, session, lifecycle);
  const limits: Record<string, number> = { ...config.budgets };
  if (config.maxIterations !== undefined) limits.iterations = config.maxIterations;
  // Writes to this run's scope are refused once the run has finished.
  const runGuard = async (scope: { id: string }, tx: Parameters<LifecycleService['assertActive']>[0]): Promise<void> => {
    if (scope.id === `run:${session.identity.thread}:${session.identity.run}`) await lifecycle.assertActive(tx);
  };
  return {
    kv: new KvService(store, session, runGuard, (planId) => plans.key(planId)),
    plans,
    scratchpad,
    finalizer: new FinalizerService(store, session, lifecycle),
    budget: new BudgetService(store, session, lifecycle, limits),
    lifecycle,
    runs: new RunService(store, session, lifecycle, scratchpad, history),
    history,
    signals: new SignalService(session, history),
  };
}
