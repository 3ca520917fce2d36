// The plan service: create, read, list, claim, update and delete plans that agents share work through.
import { randomBytes } from 'node:crypto';
import { BlackboardError, invalid } from '../errors.js';
import { idempotencyStorageKey, resolveScope, writable, type ResolvedScope } from '../context.js';
import { lastPart } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';
import { checkIfVersion } from './arguments.js';
import {
  MAX_STEPS,
  PLAN_STATUSES,
  applyStepUpdate,
  blockedError,
  buildSteps,
  checkDependencies,
  checkStarts,
  checkText,
  decodePlan,
  done,
  stepNotFound,
  type PlanRecord,
  type PlanStatus,
  type Step,
  type StepInput,
  type StepUpdate,
} from './plan-steps.js';
import { encode } from './records.js';
import type { Session } from './session.js';

export { PLAN_STATUSES, STEP_STATUSES, type PlanStatus, type Step, type StepStatus } from './plan-steps.js';

/** Why `plan_claim` took nothing: every step is done, waits on unfinished blockers, or is someone's; or the named step is someone's. */
export const CLAIM_REASONS = ['all_done', 'all_blocked', 'all_taken', 'taken'] as const;
export type ClaimReason = (typeof CLAIM_REASONS)[number];
export const PLAN_LIST_DEFAULT = 20;
export const PLAN_LIST_MAX = 1000;
/** titles are cut to this many characters in `plan_list` (plan_get has them whole) */
const LIST_TITLE_CHARS = 200;

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

const PLAN_ID_RE = /^plan-[0-9a-f]{12}$/;

/**
 * Plans: a title, a status and ordered steps with stable ids, owners and dependencies. A plan is one versioned
 * record keyed by its id (so `plan_get(planId)` and `watch` need no scope), plus an index entry in its scope for
 * `plan_list`. Completed and abandoned plans expire after the plan TTL.
 */
export class PlanService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly planTtlMs: number,
  ) {}

  /** The storage key of a plan; `watch` with `scope: "plan"` reads this. */
  key(planId: string): string {
    return this.session.keys.plan(planId);
  }
  private indexKey(scope: string, planId: string): string {
    return this.session.keys.planIndex(scope, planId);
  }
  /** The index entries (one per plan, keyed by id) of the plans of a scope. */
  indexRange(scopeId: string): { lo: string; hi: string } {
    return this.session.keys.planIndexRange(scopeId);
  }

  async create(args: { title: string; steps: Array<string | StepInput>; scope?: string; idempotencyKey?: string }): Promise<{ planId: string; plan: Plan }> {
    const scope = writable(resolveScope(args.scope ?? 'thread', this.session.identity));
    checkText('title', args.title);
    if (!Array.isArray(args.steps) || args.steps.length > MAX_STEPS) throw invalid(`steps must be a list of at most ${MAX_STEPS} steps.`);
    const planId = `plan-${randomBytes(6).toString('hex')}`;
    const record: PlanRecord = { title: args.title, status: 'active', scope: scope.label, steps: [], nextStep: 1, createdAt: Date.now() };
    record.steps = buildSteps(record, args.steps);
    checkStarts(record.steps, new Map());
    const { result } = await this.store.transact(async (tx) => {
      const entry = await tx.set(this.key(planId), encode(record), { by: this.session.by, ifVersion: 0 });
      await this.writeIndex(tx, scope, planId, record);
      return { planId, plan: view(planId, entry) };
    }, { idempotencyKey: idempotencyStorageKey(this.session.identity, 'plan_create', args.idempotencyKey) });
    return result;
  }

  async get(args: { planId: string }): Promise<{ plan: Plan }> {
    const entry = await this.store.get(this.key(checkPlanId(args.planId)));
    if (!entry) throw notFound(args.planId);
    return { plan: view(args.planId, entry) };
  }

  /** The plans of a scope, most recently changed first, at most `limit` (titles cut short; plan_get has them whole). */
  async list(args: { status?: PlanStatus; scope?: string; limit?: number }): Promise<{
    plans: Array<Omit<Plan, 'steps'> & { stepCount: number; doneCount: number }>;
    truncated: boolean;
  }> {
    if (args.status !== undefined && !(PLAN_STATUSES as readonly string[]).includes(args.status)) {
      throw invalid(`status must be one of: ${PLAN_STATUSES.join(', ')}.`);
    }
    const limit = args.limit ?? PLAN_LIST_DEFAULT;
    if (!Number.isInteger(limit) || limit < 1 || limit > PLAN_LIST_MAX) throw invalid(`limit must be a whole number from 1 to ${PLAN_LIST_MAX}.`, { limit });
    const scope = resolveScope(args.scope ?? 'thread', this.session.identity);
    const { entries } = await this.store.list({ ...this.indexRange(scope.id), limit: PLAN_LIST_MAX });
    const found: Array<{ revision: number; plan: Omit<Plan, 'steps'> & { stepCount: number; doneCount: number } }> = [];
    for (const [key] of entries) {
      const planId = lastPart(key);
      const entry = await this.store.get(this.key(planId));
      if (!entry) continue;
      const { steps, ...summary } = view(planId, entry);
      if (args.status !== undefined && summary.status !== args.status) continue;
      if (summary.title.length > LIST_TITLE_CHARS) summary.title = `${summary.title.slice(0, LIST_TITLE_CHARS)}…`;
      found.push({ revision: entry.revision, plan: { ...summary, stepCount: steps.length, doneCount: steps.filter(done).length } });
    }
    // The latest change first: the revision that wrote each plan orders them even within one millisecond.
    found.sort((a, b) => b.revision - a.revision);
    return { plans: found.slice(0, limit).map((f) => f.plan), truncated: found.length > limit };
  }

  /**
   * Takes a step for `owner` (default: the caller's agent name, else its thread) in one transaction: the named step,
   * or the first pending step that has no other owner and whose blockers are all completed or skipped. It becomes
   * `in_progress` with that owner. Nothing to take is `claimed: false` with a reason, not an error.
   */
  async claim(args: { planId: string; stepId?: string; owner?: string; idempotencyKey?: string }): Promise<{
    claimed: boolean;
    step?: Step;
    reason?: ClaimReason;
  }> {
    const planId = checkPlanId(args.planId);
    const who = this.session.identity;
    const owner = args.owner ?? who.agent ?? who.thread;
    checkText('owner', owner);
    const { result } = await this.store.transact(async (tx) => {
      const current = await tx.get(this.key(planId));
      if (!current) throw notFound(planId);
      const record = decodePlan(current.value);
      writable(scopeOf(record.scope, who));
      if (record.status !== 'active') {
        throw new BlackboardError('INVALID_TRANSITION', `Plan ${planId} is ${record.status}; only an active plan's steps can be claimed.`, { planId, status: record.status });
      }
      const byId = new Map(record.steps.map((s) => [s.id, s]));
      const waitingOn = (s: Step): string[] => (s.blockedBy ?? []).filter((id) => !done(byId.get(id)));
      const mine = (s: Step): boolean => s.owner === undefined || s.owner === owner;
      let step: Step | undefined;
      if (args.stepId !== undefined) {
        step = byId.get(args.stepId);
        if (!step) throw stepNotFound(record, args.stepId);
        if (step.status === 'in_progress' && step.owner === owner) return { claimed: true, step };
        if (!done(step) && (step.status === 'in_progress' || !mine(step))) return { claimed: false, step, reason: 'taken' as const };
        if (step.status !== 'pending') {
          throw new BlackboardError('INVALID_TRANSITION', `Step ${step.id} is ${step.status}; only a pending step can be claimed.`, { stepId: step.id, status: step.status });
        }
        const blockers = waitingOn(step);
        if (blockers.length > 0) throw blockedError(step, blockers);
      } else {
        step = record.steps.find((s) => s.status === 'pending' && mine(s) && waitingOn(s).length === 0);
        if (!step) {
          const open = record.steps.filter((s) => !done(s));
          const reason = open.length === 0 ? 'all_done' : open.some((s) => s.status === 'blocked' || (s.status === 'pending' && mine(s))) ? 'all_blocked' : 'all_taken';
          return { claimed: false, reason: reason as ClaimReason };
        }
      }
      step.status = 'in_progress';
      step.owner = owner;
      await tx.set(this.key(planId), encode(record), { by: this.session.by, ifVersion: current.version });
      return { claimed: true, step };
    }, { idempotencyKey: idempotencyStorageKey(who, 'plan_claim', args.idempotencyKey), prefetch: [this.key(planId)] });
    return result;
  }

  async update(args: {
    planId: string;
    ifVersion?: number;
    title?: string;
    status?: PlanStatus;
    steps?: Array<string | StepInput>;
    stepUpdates?: StepUpdate[];
    idempotencyKey?: string;
  }): Promise<{ plan: Plan }> {
    const planId = checkPlanId(args.planId);
    checkIfVersion(args.ifVersion);
    if (args.title !== undefined) checkText('title', args.title);
    if (args.status !== undefined && !(PLAN_STATUSES as readonly string[]).includes(args.status)) {
      throw invalid(`status must be one of: ${PLAN_STATUSES.join(', ')}.`);
    }
    const { result } = await this.store.transact(async (tx) => {
      const current = await tx.get(this.key(planId));
      if (!current) throw notFound(planId);
      const record = decodePlan(current.value);
      const before = new Map(record.steps.map((s) => [s.id, s.status]));
      const scope = writable(scopeOf(record.scope, this.session.identity));
      if (args.title !== undefined) record.title = args.title;
      if (args.status !== undefined) record.status = args.status;
      if (args.steps !== undefined) {
        if (!Array.isArray(args.steps) || args.steps.length > MAX_STEPS) throw invalid(`steps must be a list of at most ${MAX_STEPS} steps.`);
        record.steps = buildSteps(record, args.steps);
      }
      for (const change of args.stepUpdates ?? []) applyStepUpdate(record, change);
      checkDependencies(record.steps);
      checkStarts(record.steps, before);
      const entry = await tx.set(this.key(planId), encode(record), {
        by: this.session.by,
        ifVersion: args.ifVersion,
        ttlMs: record.status === 'active' ? undefined : this.planTtlMs,
      });
      await this.writeIndex(tx, scope, planId, record);
      return { plan: view(planId, entry) };
    }, { idempotencyKey: idempotencyStorageKey(this.session.identity, 'plan_update', args.idempotencyKey) });
    return result;
  }

  async delete(args: { planId: string; ifVersion?: number; idempotencyKey?: string }): Promise<{ deleted: boolean }> {
    const planId = checkPlanId(args.planId);
    checkIfVersion(args.ifVersion);
    const { result } = await this.store.transact(async (tx) => {
      const current = await tx.get(this.key(planId));
      if (!current) throw notFound(planId);
      const record = decodePlan(current.value);
      const scope = writable(scopeOf(record.scope, this.session.identity));
      await tx.delete(this.key(planId), { ifVersion: args.ifVersion });
      await tx.delete(this.indexKey(scope.id, planId));
      return { deleted: true };
    }, { idempotencyKey: idempotencyStorageKey(this.session.identity, 'plan_delete', args.idempotencyKey) });
    return result;
  }

  private async writeIndex(tx: StoreTx, scope: ResolvedScope, planId: string, record: PlanRecord): Promise<void> {
    await tx.set(this.indexKey(scope.id, planId), { status: record.status } as Json, {
      by: this.session.by,
      ttlMs: record.status === 'active' ? undefined : this.planTtlMs,
    });
  }
}

/** The scope a plan was created in, from its stored label (`run:…` and `parent:…` labels are already resolved). */
function scopeOf(label: string, who: Session['identity']): ResolvedScope {
  try {
    return resolveScope(label, who);
  } catch {
    return { label, id: label };
  }
}

function view(planId: string, entry: Entry): Plan {
  const r = decodePlan(entry.value);
  return {
    planId,
    title: r.title,
    status: r.status,
    scope: r.scope,
    steps: r.steps,
    version: entry.version,
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(entry.updatedAt).toISOString(),
    updatedBy: entry.updatedBy,
  };
}

function notFound(planId: string): BlackboardError {
  return new BlackboardError('NOT_FOUND', `There is no plan "${planId}" (it may have been deleted or expired). Use {tool:plan_list} to see the plans.`, { planId });
}

export function checkPlanId(planId: string): string {
  if (typeof planId !== 'string' || !PLAN_ID_RE.test(planId)) {
    throw invalid('planId is not a plan id (plan-xxxxxxxxxxxx). Use one returned by {tool:plan_create} or {tool:plan_list}.', { planId: String(planId).slice(0, 80) });
  }
  return planId;
}

