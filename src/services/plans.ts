import { randomBytes } from 'node:crypto';
import { BlackboardError, invalid } from '../errors.js';
import { idempotencyStorageKey, resolveScope, writable, type ResolvedScope } from '../context.js';
import { lastPart } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';
import { checkIfVersion } from './kv.js';
import type { Session } from './session.js';

export const PLAN_STATUSES = ['active', 'completed', 'abandoned'] as const;
export const STEP_STATUSES = ['pending', 'in_progress', 'completed', 'blocked', 'skipped'] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
export type StepStatus = (typeof STEP_STATUSES)[number];

export interface Step {
  id: string;
  content: string;
  status: StepStatus;
  owner?: string;
  blockedBy?: string[];
  note?: string;
}

export interface StepInput {
  id?: string;
  content: string;
  status?: StepStatus;
  owner?: string;
  blockedBy?: string[];
  note?: string;
}

export interface StepUpdate {
  id: string;
  content?: string;
  status?: StepStatus;
  owner?: string | null;
  blockedBy?: string[] | null;
  note?: string | null;
}

interface PlanRecord {
  title: string;
  status: PlanStatus;
  scope: string;
  steps: Step[];
  nextStep: number;
  createdAt: number;
}

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
const MAX_STEPS = 200;
const MAX_TEXT = 4000;

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
    const { result } = await this.store.transact(async (tx) => {
      const entry = await tx.set(this.key(planId), record as unknown as Json, { by: this.session.by, ifVersion: 0 });
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

  async list(args: { status?: PlanStatus; scope?: string }): Promise<{ plans: Array<Omit<Plan, 'steps'> & { stepCount: number; doneCount: number }> }> {
    if (args.status !== undefined && !(PLAN_STATUSES as readonly string[]).includes(args.status)) {
      throw invalid(`status must be one of: ${PLAN_STATUSES.join(', ')}.`);
    }
    const scope = resolveScope(args.scope ?? 'thread', this.session.identity);
    const { entries } = await this.store.list({ ...this.indexRange(scope.id), limit: 1000 });
    const plans = [];
    for (const [key] of entries) {
      const planId = lastPart(key);
      const entry = await this.store.get(this.key(planId));
      if (!entry) continue;
      const plan = view(planId, entry);
      if (args.status !== undefined && plan.status !== args.status) continue;
      const { steps, ...summary } = plan;
      const doneCount = steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length;
      plans.push({ ...summary, stepCount: steps.length, doneCount });
    }
    return { plans };
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
      const record = structuredClone(current.value) as unknown as PlanRecord;
      const scope = writable(scopeOf(record.scope, this.session.identity));
      if (args.title !== undefined) record.title = args.title;
      if (args.status !== undefined) record.status = args.status;
      if (args.steps !== undefined) {
        if (!Array.isArray(args.steps) || args.steps.length > MAX_STEPS) throw invalid(`steps must be a list of at most ${MAX_STEPS} steps.`);
        record.steps = buildSteps(record, args.steps);
      }
      for (const change of args.stepUpdates ?? []) applyStepUpdate(record, change);
      checkDependencies(record.steps);
      const entry = await tx.set(this.key(planId), record as unknown as Json, {
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
      const record = current.value as unknown as PlanRecord;
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
  const r = entry.value as unknown as PlanRecord;
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
  return new BlackboardError('NOT_FOUND', `There is no plan "${planId}" (it may have been deleted or expired). Use plan_list to see the plans.`, { planId });
}

export function checkPlanId(planId: string): string {
  if (typeof planId !== 'string' || !PLAN_ID_RE.test(planId)) {
    throw invalid('planId is not a plan id (plan-xxxxxxxxxxxx): use one returned by plan_create or plan_list.', { planId: String(planId).slice(0, 80) });
  }
  return planId;
}

function checkText(what: string, text: unknown): void {
  if (typeof text !== 'string' || text.trim() === '' || text.length > MAX_TEXT) {
    throw invalid(`${what} must be non-empty text of at most ${MAX_TEXT} characters.`);
  }
}

function checkStatus(status: unknown): StepStatus {
  if (!(STEP_STATUSES as readonly unknown[]).includes(status)) throw invalid(`A step status is one of: ${STEP_STATUSES.join(', ')}.`);
  return status as StepStatus;
}

/** New step list: items with a known `id` keep it; new items get the next ids. */
function buildSteps(record: PlanRecord, inputs: Array<string | StepInput>): Step[] {
  const known = new Set(record.steps.map((s) => s.id));
  const seen = new Set<string>();
  const steps = inputs.map((input) => {
    const item: StepInput = typeof input === 'string' ? { content: input } : input;
    checkText('A step\'s content', item.content);
    let id = item.id;
    if (id !== undefined) {
      if (!known.has(id)) throw invalid(`Step id "${id}" is not in this plan; leave id out for a new step.`, { id });
    } else {
      id = `s${record.nextStep++}`;
    }
    if (seen.has(id)) throw invalid(`Step id "${id}" appears twice.`, { id });
    seen.add(id);
    const step: Step = { id, content: item.content, status: item.status === undefined ? 'pending' : checkStatus(item.status) };
    if (item.owner !== undefined) step.owner = item.owner;
    if (item.blockedBy !== undefined) step.blockedBy = item.blockedBy;
    if (item.note !== undefined) step.note = item.note;
    return step;
  });
  checkDependencies(steps);
  return steps;
}

function applyStepUpdate(record: PlanRecord, change: StepUpdate): void {
  const step = record.steps.find((s) => s.id === change.id);
  if (!step) {
    throw new BlackboardError('NOT_FOUND', `Step "${change.id}" is not in this plan. Steps: ${record.steps.map((s) => s.id).join(', ') || 'none'}.`, { stepId: change.id });
  }
  if (change.content !== undefined) {
    checkText('A step\'s content', change.content);
    step.content = change.content;
  }
  if (change.status !== undefined) step.status = checkStatus(change.status);
  for (const field of ['owner', 'note', 'blockedBy'] as const) {
    const value = change[field];
    if (value === null) delete step[field];
    else if (value !== undefined) (step as unknown as Record<string, unknown>)[field] = value;
  }
}

function checkDependencies(steps: Step[]): void {
  const ids = new Set(steps.map((s) => s.id));
  for (const step of steps) {
    for (const dep of step.blockedBy ?? []) {
      if (dep === step.id) throw invalid(`Step ${step.id} cannot be blocked by itself.`, { stepId: step.id });
      if (!ids.has(dep)) throw invalid(`Step ${step.id} is blocked by "${dep}", which is not a step of this plan.`, { stepId: step.id, blockedBy: dep });
    }
  }
}
