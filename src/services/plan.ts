// The plan service: create, read, list, update and delete plans; claims and step moves are in plan-work.ts.
import { randomBytes } from 'node:crypto';
import { BlackboardError, invalid } from '../errors.js';
import { idempotent, resolveScope, writable, type CallOptions, type ResolvedScope } from '../context.js';
import { canonicalJson } from '../store/ops.js';
import type { Json, KeyRange } from '../store/types.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';
import { checkIfVersion } from './arguments.js';
import type { HistoryService } from './history.js';
import { checkPlanScopeWrite } from './run-guard.js';
import { runReplaced } from './run-plans.js';
import { grant, holderText, ownerName, revoke, sameHolder, settle, checkMover, checkNoOthersWork } from './plan-claims.js';
import {
  MAX_STEPS,
  PLAN_STATUSES,
  applyStepUpdate,
  buildSteps,
  checkDependencies,
  checkPlanId,
  checkStarts,
  checkText,
  decodePlan,
  done,
  notFound,
  replaceSteps,
  stepNotFound,
  type PlanRecord,
  type PlanStatus,
  type StepInput,
  type StepUpdate,
} from './plan-steps.js';
import { listPlans, type PlanList } from './plan-list.js';
import { counts, fitWrite, type PlanPage, planConflict, planPage, planView, stepView, unblocked, type StepView } from './plan-views.js';
import type { Presence } from './presence.js';
import { encode } from './records.js';
import type { Session } from './session.js';

export { PLAN_STATUSES, STEP_STATUSES, checkPlanId, notFound, type PlanStatus, type Step, type StepStatus } from './plan-steps.js';
export { PLAN_LIST_DEFAULT, PLAN_LIST_MAX, type PlanList, type PlanSummary } from './plan-list.js';
/** What a plan write answers: the plan's id and version, the steps it changed, and counts — never the whole plan. */
export interface PlanWrite {
  planId: string;
  version: number;
  status: PlanStatus;
  changed: StepView[];
  removed?: string[];
  done: number;
  total: number;
  unblocked: string[];
}

/**
 * Plans: a title, a status and ordered steps with stable ids, owners, dependencies and claims. A plan is one
 * versioned record keyed by its id (so `plan_get(planId)` and `watch` need no scope), plus an index entry in its
 * scope for `plan_list`. Completed and abandoned plans expire after the plan TTL. Every read and write first lapses
 * the claims whose holders stopped (see plan-claims.ts); a write stores that.
 */
export class PlanService {
  constructor(
    readonly store: VersionedStore,
    readonly session: Session,
    readonly planTtlMs: number,
    readonly presence: Presence,
    private readonly history: HistoryService,
    /**
     * The refusal of new work (LIMIT_REACHED) once a budget of the caller's thread or an ancestor is used up, or
     * `undefined`: a write that would make the caller hold or finish a step it does not hold is refused with it.
     */
    readonly spent: () => Promise<BlackboardError | undefined>,
  ) {}

  /** The storage key of a plan; `watch` with `scope: "plan"` reads this. */
  key(planId: string): string {
    return this.session.keys.plan(planId);
  }
  private indexKey(scope: string, planId: string): string {
    return this.session.keys.planIndex(scope, planId);
  }
  /** The index entries (one per plan, keyed by id) of the plans of a scope. */
  indexRange(scopeId: string): KeyRange {
    return this.session.keys.planIndexRange(scopeId);
  }

  /** Reads outside a transaction, with the store's clock of now (for plan_get and plan_list). */
  reader(): Pick<StoreTx, 'get' | 'now'> {
    return { get: (key: string) => this.store.get(key), now: this.store.now() };
  }

  /** A plan in a transaction (or as read now), lapsed claims back to pending; VERSION_CONFLICT if not at `ifVersion`. */
  async loadIn(
    tx: Pick<StoreTx, 'get' | 'now'>,
    planId: string,
    { exact = false, ifVersion }: { exact?: boolean; ifVersion?: number } = {},
  ): Promise<{ current: Entry; record: PlanRecord; leaseUntil: Map<string, number>; lapsed: string[] }> {
    const current = await tx.get(this.key(planId));
    if (!current) throw notFound(planId);
    const record = decodePlan(current.value);
    if (ifVersion !== undefined && ifVersion !== current.version) throw planConflict(planId, record, current, ifVersion);
    const { leaseUntil, lapsed } = await settle(record, (h) => this.presence.readIn(tx, h), tx.now, exact);
    return { current, record, leaseUntil, lapsed };
  }

  /** Stores a changed plan (and its index entry), guarded by the version it was read at. */
  async saveIn(tx: StoreTx, planId: string, record: PlanRecord, ifVersion: number): Promise<Entry> {
    // a plan of a replaced run keeps the TTL it was given at run_start while workers still report into it
    const expires = record.status !== 'active' || (await runReplaced(tx, this.session.keys, record.scope));
    const ttlMs = expires ? this.planTtlMs : undefined;
    const entry = await tx.set(this.key(planId), encode(record), { by: this.session.by, ifVersion, ttlMs });
    await tx.set(this.indexKey(scopeOf(record.scope, this.session).id, planId), { status: record.status } as Json, {
      by: this.session.by,
      ttlMs,
    });
    return entry;
  }

  async create(
    args: { title: string; steps: Array<string | StepInput>; scope?: string; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<{ planId: string; version: number; scope: string; stepIds: string[]; done: number; total: number }> {
    if (args.scope === 'run') await this.session.refresh(); // the thread's current run, should another have begun one
    const scope = writable(resolveScope(args.scope ?? 'global', this.session.identity));
    checkText('title', args.title, 'title');
    if (!Array.isArray(args.steps) || args.steps.length > MAX_STEPS)
      throw invalid(`steps must be a list of at most ${MAX_STEPS} steps.`, { path: 'steps' });
    const planId = `plan-${randomBytes(6).toString('hex')}`;
    const spent = await this.spentFor(args.steps, []);
    const { result } = await this.store.transact(
      async (tx) => {
        await this.checkScopeWrite(tx, scope.label);
        const record: PlanRecord = { title: args.title, status: 'active', scope: scope.label, steps: [], nextStep: 1, createdAt: tx.now };
        record.steps = buildSteps(record, args.steps);
        await this.grantStarted(tx, record, new Set(), spent);
        checkStarts(record.steps, new Map());
        const entry = await this.saveIn(tx, planId, record, 0);
        return { planId, version: entry.version, scope: scope.label, stepIds: record.steps.map((s) => s.id), ...counts(record) };
      },
      idempotent(this.session.identity, call, { ...args, scope: scope.label }),
    );
    return result;
  }

  async get(args: { planId: string; detail?: 'summary' | 'full'; cursor?: string }): Promise<PlanPage> {
    const planId = checkPlanId(args.planId);
    const detail = args.detail ?? 'summary';
    const { current, record, leaseUntil } = await this.loadIn(this.reader(), planId, { exact: detail === 'full' });
    return planPage(planView(planId, record, current, leaseUntil, detail), args.cursor, detail);
  }

  /**
   * The plans the caller can see, most recently changed first: those of `scope`, or without one those of global,
   * its delegation tree's root, its parent thread and its own thread. Titles are cut short; no steps.
   */
  list(args: { status?: PlanStatus; scope?: string; cursor?: string; limit?: number }): Promise<PlanList> {
    return listPlans(this, args);
  }

  async update(
    args: {
      planId: string;
      ifVersion?: number;
      title?: string;
      status?: PlanStatus;
      steps?: Array<string | StepInput>;
      stepUpdates?: StepUpdate[];
      idempotencyKey?: string;
    },
    call: CallOptions,
  ): Promise<PlanWrite> {
    const planId = checkPlanId(args.planId);
    checkIfVersion(args.ifVersion);
    if (args.title !== undefined) checkText('title', args.title, 'title');
    if (args.status !== undefined && !(PLAN_STATUSES as readonly string[]).includes(args.status)) {
      throw invalid(`status must be one of: ${PLAN_STATUSES.join(', ')}.`, { path: 'status' });
    }
    if (args.steps !== undefined && args.ifVersion === undefined) {
      throw invalid(
        'Replacing the steps needs ifVersion, the version of the plan the new list was made from (read it with {tool:plan_get}), so a list made from an older plan cannot overwrite newer work. To change single steps use stepUpdates.',
        { path: 'ifVersion' },
      );
    }
    const holder = this.presence.holder();
    const spent = await this.spentFor(args.steps, args.stepUpdates);
    const { result } = await this.store.transact(
      async (tx) => {
        const { current, record } = await this.loadIn(tx, planId, { ifVersion: args.ifVersion });
        const before = new Map(record.steps.map((s) => [s.id, s.status]));
        writable(scopeOf(record.scope, this.session));
        if (args.title !== undefined || args.status !== undefined || args.steps !== undefined) await this.checkScopeWrite(tx, record.scope);
        if (args.title !== undefined) record.title = args.title;
        if (args.status !== undefined) record.status = args.status;
        const changed = new Set<string>();
        let removed: string[] | undefined;
        if (args.steps !== undefined) {
          if (!Array.isArray(args.steps) || args.steps.length > MAX_STEPS)
            throw invalid(`steps must be a list of at most ${MAX_STEPS} steps.`, { path: 'steps' });
          const old = new Map(record.steps.map((s) => [s.id, s]));
          record.steps = replaceSteps(record, args.steps);
          removed = [...old.keys()].filter((id) => !record.steps.some((s) => s.id === id));
          for (const s of record.steps) {
            const was = old.get(s.id);
            if (was !== undefined && was.content === s.content && `${was.blockedBy ?? []}` === `${s.blockedBy ?? []}`) continue;
            // a step someone else holds is theirs to change, as with stepUpdates
            if (was?.claim !== undefined && !sameHolder(was.claim, holder)) checkMover(was, holder, undefined, false);
            changed.add(s.id);
          }
        }
        let granted = false;
        for (const [u, change] of (args.stepUpdates ?? []).entries()) {
          const step = record.steps.find((s) => s.id === change.id);
          if (!step) throw stepNotFound(record, change.id, `stepUpdates[${u}].id`);
          const reassign = change.owner !== undefined && change.owner !== null;
          const revoking = step.claim !== undefined && !sameHolder(step.claim, holder) && reassign;
          // the caller's own claim, its step given to another owner (or none), is given up: pending for that owner
          const releasing = step.claim !== undefined && !revoking && reassign && change.owner !== ownerName(holder);
          // taking a held step from its holder is the planner's: whoever may write the plan itself
          if (revoking) await this.checkScopeWrite(tx, record.scope);
          // a deliberate reassignment (owner set) is a planner's to make; any other status change is a move
          const moving = !reassign && change.status !== undefined && change.status !== null && change.status !== step.status;
          // finished work stays as it was done: another agent's completed or skipped step is not reopened or re-owned
          const renote = change.note !== undefined && change.note !== null && change.note !== (step.note ?? '');
          if (done(step) && step.owner !== undefined && step.owner !== ownerName(holder) && (moving || reassign || renote)) {
            throw new BlackboardError(
              'INVALID_TRANSITION',
              `Step ${step.id} is already ${step.status} by ${step.owner}; another agent's finished work is not undone. Nothing was changed. Add a new step for more work on it.`,
              { stepId: step.id, status: step.status, owner: step.owner },
            );
          }
          const mover = revoking ? 'free' : checkMover(step, holder, undefined, moving);
          // a spent caller takes no new work: it starts or completes only a step it holds (or takes back to finish)
          const finishing = mover === 'holder' || (mover === 'retaken' && change.status === 'completed');
          if (spent && !finishing && (change.status === 'in_progress' || change.status === 'completed') && change.status !== step.status)
            throw spent;
          if (revoking && step.claim) {
            await this.history.appendIn(tx, {
              kind: 'plan_reassign',
              content: `${planId} ${step.id}: from ${holderText(step.claim)} to ${change.owner || 'nobody'}`,
              data: encode({ planId, stepId: step.id, from: { ...step.claim }, to: change.owner || null }),
            });
            revoke(step);
          }
          // back to pending: a step left in progress with no claim would be held by nobody, never lapsing; set in
          // progress again by this update, it is granted to the caller like any step it starts
          if (releasing) delete step.claim;
          if ((revoking || releasing) && step.status === 'in_progress') step.status = 'pending';
          const wasStatus = step.status;
          applyStepUpdate(record, change, `stepUpdates[${u}]`);
          if (step.status !== wasStatus) {
            if (step.status === 'in_progress') {
              grant(record, step, holder, tx.now, this.presence.leaseMs, mover === 'retaken');
              granted = true;
            } else delete step.claim;
            if (step.status === 'pending' && !reassign) delete step.owner;
            if (reassign && change.owner !== '') step.owner = change.owner!;
          }
          changed.add(step.id);
        }
        // a grant holds while its holder shows life from then on (a caller with no sign of life yet gets one now)
        if (granted) await this.presence.renewIn(tx);
        await this.grantStarted(tx, record, new Set(before.keys()), spent);
        // a step's blockers are where the call gave them: in its step update, else in the new list
        const updated = new Map((args.stepUpdates ?? []).map((c, u) => [c.id, u]));
        checkDependencies(record.steps, (i) => {
          const u = updated.get(record.steps[i].id);
          return u === undefined ? `steps[${i}]` : `stepUpdates[${u}]`;
        });
        checkStarts(record.steps, before);
        // an update that changes nothing writes nothing: no new version for others' ifVersion to trip on
        const same =
          canonicalJson(encode(record)) === canonicalJson(current.value) && (args.ifVersion ?? current.version) === current.version;
        const entry = same ? current : await this.saveIn(tx, planId, record, args.ifVersion ?? current.version);
        const freed = unblocked(before, record);
        return fitWrite((chars) => ({
          planId,
          version: entry.version,
          status: record.status,
          changed: record.steps.filter((s) => changed.has(s.id)).map((s) => stepView(s, new Map(), 'summary', chars)),
          ...(removed && removed.length > 0 ? { removed } : {}),
          ...counts(record),
          unblocked: freed,
        }));
      },
      idempotent(this.session.identity, call, args),
    );
    return result;
  }

  async delete(args: { planId: string; ifVersion?: number; idempotencyKey?: string }, call: CallOptions): Promise<{ deleted: boolean }> {
    const planId = checkPlanId(args.planId);
    checkIfVersion(args.ifVersion);
    const holder = this.presence.holder();
    const { result } = await this.store.transact(
      async (tx) => {
        const { record } = await this.loadIn(tx, planId, { ifVersion: args.ifVersion });
        const scope = writable(scopeOf(record.scope, this.session));
        await this.checkScopeWrite(tx, record.scope);
        checkNoOthersWork(planId, record, holder);
        await tx.delete(this.key(planId), { ifVersion: args.ifVersion });
        await tx.delete(this.indexKey(scope.id, planId));
        return { deleted: true };
      },
      idempotent(this.session.identity, call, args),
    );
    return result;
  }

  /**
   * Steps that are in progress without a claim (made so at creation or in a replace) become the caller's claims
   * (refused with `spent` when the caller may take no new work).
   */
  private async grantStarted(tx: StoreTx, record: PlanRecord, known: Set<string>, spent: BlackboardError | undefined): Promise<void> {
    const holder = this.presence.holder();
    const mine = holder.agent ?? holder.thread;
    const started = record.steps.filter((s) => s.status === 'in_progress' && !s.claim && !known.has(s.id));
    if (started.length > 0 && spent) throw spent;
    for (const step of started) {
      if (step.owner !== undefined && step.owner !== mine) {
        throw invalid(
          `Step "${step.content.slice(0, 60)}" is in_progress with owner "${step.owner}": a step made in progress is yours. Leave owner out, or make it pending with that owner.`,
          { owner: step.owner, path: 'steps' },
        );
      }
      grant(record, step, holder, tx.now, this.presence.leaseMs);
    }
    if (started.length > 0) await this.presence.touchIn(tx);
  }

  /** {@link spent}, read (before a transaction: budgets only grow) only when the write could start or complete a step. */
  private async spentFor(
    steps: Array<string | StepInput> | undefined,
    updates: StepUpdate[] | undefined,
  ): Promise<BlackboardError | undefined> {
    const starts = (steps ?? []).some((s) => typeof s !== 'string' && s?.status === 'in_progress');
    const moves = (updates ?? []).some((u) => u?.status === 'in_progress' || u?.status === 'completed');
    return starts || moves ? this.spent() : undefined;
  }

  private checkScopeWrite(tx: StoreTx, label: string): Promise<void> {
    return checkPlanScopeWrite(this.session, tx, label);
  }
}

/** The scope a plan was created in, from its stored label (`run:…` and `parent:…` labels are already resolved). */
function scopeOf(label: string, session: Session): ResolvedScope {
  try {
    return resolveScope(label, session.identity);
  } catch {
    return { label, id: label };
  }
}
