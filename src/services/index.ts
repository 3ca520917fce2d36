// Wires one connection's services over the shared store and the connection's session.
import type { Config } from '../config.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { BudgetService } from './budget.js';
import { ChangesService } from './changes.js';
import { BundleService } from './bundles.js';
import { CheckpointService } from './checkpoint.js';
import { FinalizerService } from './finalizer.js';
import { HistoryService } from './history.js';
import { KvService } from './kv.js';
import { LifecycleService } from './lifecycle.js';
import { PlanService } from './plan.js';
import { PlanWork } from './plan-work.js';
import { MessageService } from './messages.js';
import { Presence } from './presence.js';
import { RunService } from './run.js';
import { ScratchpadService } from './scratchpad.js';
import { SignalService } from './signal.js';
import { TeamService } from './team.js';
import { familySelected } from '../tool-profiles.js';
import { runScopeGuard } from './run-guard.js';
import type { Session } from './session.js';

/** The services of one connection: plain TypeScript over the shared store and this connection's session. */
export interface Services {
  kv: KvService;
  changes: ChangesService;
  plans: PlanService;
  /** plan_claim and plan_step */
  work: PlanWork;
  /** the caller's sign of life, renewed by every tool call */
  presence: Presence;
  scratchpad: ScratchpadService;
  finalizer: FinalizerService;
  budget: BudgetService;
  lifecycle: LifecycleService;
  runs: RunService;
  history: HistoryService;
  signals: SignalService;
  checkpoints: CheckpointService;
  /** export and import of a thread's or namespace's state */
  bundles: BundleService;
  /** the store and session the services share (the board tools read through them) */
  store: VersionedStore;
  session: Session;
  /** the roster, and messages between agents */
  team: TeamService;
  messages: MessageService;
}

export function createServices(store: VersionedStore, session: Session, config: Config): Services {
  const lifecycle = new LifecycleService(store, session);
  const history = new HistoryService(store, session);
  const presence = new Presence(store, session, config.claimLeaseSeconds * 1000, config.rosterWindowSeconds * 1000);
  const times = { leaseMs: config.claimLeaseSeconds * 1000, windowMs: config.rosterWindowSeconds * 1000 };
  const limits: Record<string, number> = { ...config.budgets };
  if (config.maxIterations !== undefined) limits.iterations = config.maxIterations;
  const budget = new BudgetService(store, session, lifecycle, limits);
  // plan writes refuse new work (claiming, starting or finishing a step one does not hold) once a budget is used up
  const spent = async () => {
    await session.refresh(); // the thread's place in the tree, should a run_start elsewhere have given it a parent
    return budget.usedUp([session.identity.thread, ...(await session.ancestors())]);
  };
  const plans = new PlanService(store, session, config.planTtlSeconds * 1000, presence, history, spent);
  const scratchpad = new ScratchpadService(store, session, lifecycle);
  const runs = new RunService(store, session, lifecycle, scratchpad, history, plans.planTtlMs);
  const finalizer = new FinalizerService(store, session, lifecycle);
  const checkpoints = new CheckpointService(store, session, config.keepCheckpoints, plans.planTtlMs);
  if (familySelected(config.tools, 'checkpoint')) {
    runs.onRunEnd = async (tx, status) => (await checkpoints.saveIn(tx, session.identity.thread, `run_end: ${status}`)).checkpointId;
  }
  return {
    kv: new KvService(store, session, runScopeGuard(session, lifecycle), (planId) => plans.key(planId)),
    changes: new ChangesService(store, session),
    plans,
    work: new PlanWork(plans),
    presence,
    scratchpad,
    finalizer,
    budget,
    lifecycle,
    runs,
    history,
    signals: new SignalService(session, history),
    checkpoints,
    bundles: new BundleService(store, session, plans.planTtlMs),
    store,
    session,
    team: new TeamService(store, session, times),
    messages: new MessageService(store, session, { ...times, retentionMs: config.messageRetentionSeconds * 1000 }),
  };
}
