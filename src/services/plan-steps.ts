// Plan records and the rules of their steps: ids, statuses, owners, blockers (no cycles, no starting while blocked).
import * as z from 'zod';
import { THREAD_RE } from '../context.js';
import { BlackboardError, invalid } from '../errors.js';
import type { Json } from '../store/types.js';
import { decode } from './records.js';

export const PLAN_STATUSES = ['active', 'completed', 'abandoned'] as const;
export const STEP_STATUSES = ['pending', 'in_progress', 'completed', 'blocked', 'skipped'] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
export type StepStatus = (typeof STEP_STATUSES)[number];
export const MAX_STEPS = 200;
const MAX_TEXT = 4000;

/** A live claim on a step: its holder (agent name, thread), the fence it was granted with, when and for how long. */
export interface Claim {
  agent?: string;
  thread: string;
  fence: number;
  /** the store's clock at the grant */
  at: number;
  leaseMs: number;
}

/** A holder whose claim lapsed (and who gets CLAIM_LOST, not FORBIDDEN, when it comes back). */
export interface LostClaim {
  agent?: string;
  thread: string;
  fence: number;
  /** the claim was taken by a deliberate reassignment, not lapsed */
  reassigned?: boolean;
  /** the step was granted again after this claim ended */
  superseded?: boolean;
}

export interface Step {
  id: string;
  content: string;
  status: StepStatus;
  owner?: string;
  blockedBy?: string[];
  note?: string;
  /** how many claims on the step lapsed */
  attempts?: number;
  claim?: Claim;
  lost?: LostClaim[];
  /** the highest fence of the holders that lost the step and are no longer in `lost` */
  forgotten?: number;
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

export interface PlanRecord {
  title: string;
  status: PlanStatus;
  scope: string;
  steps: Step[];
  nextStep: number;
  createdAt: number;
  /** the last fence granted: every claim on the plan gets a higher one */
  fence?: number;
}

/** A stored plan, decoded once (a record that does not fit is reported as corrupt). */
const Step = z.object({
  id: z.string(),
  content: z.string(),
  status: z.enum(STEP_STATUSES),
  owner: z.string().optional(),
  blockedBy: z.array(z.string()).optional(),
  note: z.string().optional(),
  attempts: z.number().int().optional(),
  claim: z
    .object({ agent: z.string().optional(), thread: z.string(), fence: z.number().int(), at: z.number(), leaseMs: z.number() })
    .optional(),
  lost: z
    .array(
      z.object({
        agent: z.string().optional(),
        thread: z.string(),
        fence: z.number().int(),
        reassigned: z.boolean().optional(),
        superseded: z.boolean().optional(),
      }),
    )
    .optional(),
  forgotten: z.number().int().optional(),
});
export const PlanRecordSchema: z.ZodType<PlanRecord> = z.object({
  title: z.string(),
  status: z.enum(PLAN_STATUSES),
  scope: z.string(),
  steps: z.array(Step),
  nextStep: z.number().int(),
  createdAt: z.number(),
  fence: z.number().int().optional(),
});
/** The plan in a stored value, as a fresh object the caller may change. */
export const decodePlan = (value: Json): PlanRecord => decode(PlanRecordSchema, value, 'plan');

export function stepNotFound(record: PlanRecord, stepId: string, path = 'stepId'): BlackboardError {
  return new BlackboardError(
    'NOT_FOUND',
    `Step "${stepId}" is not in this plan. Steps: ${record.steps.map((s) => s.id).join(', ') || 'none'}.`,
    { stepId, path },
  );
}

export function blockedError(step: Step, blockers: string[]): BlackboardError {
  return new BlackboardError(
    'INVALID_TRANSITION',
    `Step ${step.id} is blocked by ${blockers.join(', ')}, not yet completed or skipped; it cannot start or complete before them. Finish those first (or take another step with {tool:plan_claim}).`,
    { stepId: step.id, blockedBy: blockers },
  );
}

/** A step that needs no more work (a stored step, or one as the board shows it). */
export const done = (step: { status: string } | undefined): boolean => step?.status === 'completed' || step?.status === 'skipped';

export function checkText(what: string, text: unknown, path: string): void {
  if (typeof text !== 'string' || text.trim() === '' || text.length > MAX_TEXT) {
    throw invalid(`${what} must be non-empty text of at most ${MAX_TEXT} characters.`, { path });
  }
}

/**
 * A step's owner is who holds or did it, as claims name them: an agent name, or the thread id of an agent without one
 * (`""` is no owner). Anything else could never match a claimant, and would keep the step from ever being claimed.
 */
export function checkOwner(owner: unknown, path: string): string {
  if (typeof owner === 'string' && THREAD_RE.test(owner)) return owner;
  throw invalid(
    `A step's owner is an agent name (or the thread id of an agent without one): 1-160 letters, digits, "_", ".", "@", ":" or "-"; "" for none. Got ${JSON.stringify(String(owner).slice(0, 80))}.`,
    { path },
  );
}

export function checkStatus(status: unknown, path: string): StepStatus {
  if (!(STEP_STATUSES as readonly unknown[]).includes(status))
    throw invalid(`A step status is one of: ${STEP_STATUSES.join(', ')}.`, { path });
  return status as StepStatus;
}

/** Where the tool's arguments hold the step at `index` of a list (for `details.path`): `steps[index]` by default. */
export type StepPath = (index: number) => string;
const inSteps: StepPath = (index) => `steps[${index}]`;

/** New step list: items with a known `id` keep it; new items get the next ids. `at` names the items in errors. */
export function buildSteps(record: PlanRecord, inputs: Array<string | StepInput>, taken = new Set<string>(), at = inSteps): Step[] {
  const known = new Set(record.steps.map((s) => s.id));
  const seen = new Set<string>(taken);
  const steps = inputs.map((input, i) => {
    const item: StepInput = typeof input === 'string' ? { content: input } : input;
    checkText("A step's content", item.content, `${at(i)}.content`);
    let id = item.id;
    if (id !== undefined) {
      if (!known.has(id)) throw invalid(`Step id "${id}" is not in this plan; leave id out for a new step.`, { id, path: `${at(i)}.id` });
    } else {
      id = `s${record.nextStep++}`;
    }
    if (seen.has(id)) throw invalid(`Step id "${id}" appears twice.`, { id, path: `${at(i)}.id` });
    seen.add(id);
    const step: Step = {
      id,
      content: item.content,
      status: item.status === undefined ? 'pending' : checkStatus(item.status, `${at(i)}.status`),
    };
    if (item.owner !== undefined && item.owner !== '') step.owner = checkOwner(item.owner, `${at(i)}.owner`);
    if (item.blockedBy !== undefined) step.blockedBy = item.blockedBy;
    if (item.note !== undefined) step.note = item.note;
    return step;
  });
  if (taken.size === 0) checkDependencies(steps, at);
  return steps;
}

/**
 * The step list of a replace: an item is matched to an existing step by its `id`, else by identical content; a
 * matched step keeps its status, owner, claim, note and attempts (the item may change its content and blockers);
 * other items are new steps. Dropping a step that is in progress or completed is refused.
 */
export function replaceSteps(record: PlanRecord, inputs: Array<string | StepInput>): Step[] {
  const byId = new Map(record.steps.map((s) => [s.id, s]));
  const used = new Set<string>();
  const fresh: StepInput[] = [];
  /** where each fresh item is in `inputs` */
  const freshAt: number[] = [];
  const steps = inputs.map((input, i) => {
    const item: StepInput = typeof input === 'string' ? { content: input } : input;
    checkText("A step's content", item.content, `${inSteps(i)}.content`);
    let match: Step | undefined;
    if (item.id !== undefined) {
      match = byId.get(item.id);
      const path = `${inSteps(i)}.id`;
      if (!match) throw invalid(`Step id "${item.id}" is not in this plan; leave id out for a new step.`, { id: item.id, path });
      if (used.has(item.id)) throw invalid(`Step id "${item.id}" appears twice.`, { id: item.id, path });
    } else {
      match = record.steps.find((s) => !used.has(s.id) && s.content === item.content);
    }
    if (!match) {
      fresh.push(item);
      freshAt.push(i);
      return undefined;
    }
    used.add(match.id);
    const step: Step = { ...match, content: item.content };
    if (item.blockedBy !== undefined) step.blockedBy = item.blockedBy;
    return step;
  });
  const kept = new Set([...used]);
  const added = buildSteps(record, fresh, kept, (j) => inSteps(freshAt[j]));
  const out = steps.map((s) => s ?? added.shift()!);
  for (const step of out) {
    if (step.blockedBy !== undefined && used.has(step.id)) step.blockedBy = step.blockedBy.filter((id) => out.some((o) => o.id === id));
    if (step.blockedBy?.length === 0) delete step.blockedBy;
  }
  const dropped = record.steps.filter((s) => !used.has(s.id) && (s.status === 'in_progress' || s.status === 'completed'));
  if (dropped.length > 0) {
    throw invalid(
      `This replace would drop ${dropped.map((s) => `${s.id} (${s.status})`).join(', ')}: work in progress or done is never dropped. Keep them in the list (by id or identical content), or mark them skipped first with stepUpdates. Nothing was changed.`,
      { steps: dropped.map((s) => s.id), path: 'steps' },
    );
  }
  checkDependencies(out);
  return out;
}

/** Applies one of plan_update's `stepUpdates`; `at` is where the arguments hold it (`stepUpdates[i]`). */
export function applyStepUpdate(record: PlanRecord, change: StepUpdate, at: string): void {
  const step = record.steps.find((s) => s.id === change.id);
  if (!step) throw stepNotFound(record, change.id, `${at}.id`);
  if (change.content !== undefined) {
    checkText("A step's content", change.content, `${at}.content`);
    step.content = change.content;
  }
  if (change.status !== undefined) step.status = checkStatus(change.status, `${at}.status`);
  // An empty text or list clears the field; null, like a missing field, leaves it as it is (strict tool bridges send
  // null for every argument not given).
  if (typeof change.owner === 'string' && change.owner !== '') checkOwner(change.owner, `${at}.owner`);
  for (const field of ['owner', 'note', 'blockedBy'] as const) {
    const value = change[field];
    if (value === '' || (Array.isArray(value) && value.length === 0)) delete step[field];
    else if (value !== undefined && value !== null) Object.assign(step, { [field]: value });
  }
}

/** `blockedBy` names steps of the same plan and never forms a cycle. `at` names a step in errors by its index. */
export function checkDependencies(steps: Step[], at = inSteps): void {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const pathOf = (id: string): string => `${at(steps.findIndex((s) => s.id === id))}.blockedBy`;
  for (const step of steps) {
    for (const dep of step.blockedBy ?? []) {
      const path = pathOf(step.id);
      if (dep === step.id) throw invalid(`Step ${step.id} cannot be blocked by itself.`, { stepId: step.id, path });
      if (!byId.has(dep))
        throw invalid(`Step ${step.id} is blocked by "${dep}", which is not a step of this plan.`, {
          stepId: step.id,
          blockedBy: dep,
          path,
        });
    }
  }
  // Depth-first search; a step met again while still on the path closes a cycle.
  const state = new Map<string, 'open' | 'closed'>();
  const visit = (id: string, path: string[]): void => {
    if (state.get(id) === 'closed') return;
    if (state.get(id) === 'open') {
      const cycle = [...path.slice(path.indexOf(id)), id];
      throw invalid(`blockedBy forms a cycle: ${cycle.join(' → ')}. A step cannot wait, directly or not, on itself.`, {
        cycle,
        path: pathOf(cycle[0]),
      });
    }
    state.set(id, 'open');
    for (const dep of byId.get(id)!.blockedBy ?? []) visit(dep, [...path, id]);
    state.set(id, 'closed');
  };
  for (const step of steps) visit(step.id, []);
}

/** A step whose status becomes in_progress or completed must have every blocker completed or skipped. */
export function checkStarts(steps: Step[], before: Map<string, StepStatus>): void {
  const byId = new Map(steps.map((s) => [s.id, s]));
  for (const step of steps) {
    if ((step.status !== 'in_progress' && step.status !== 'completed') || before.get(step.id) === step.status) continue;
    const blockers = (step.blockedBy ?? []).filter((id) => !done(byId.get(id)));
    if (blockers.length > 0) throw blockedError(step, blockers);
  }
}

const PLAN_ID_RE = /^plan-[0-9a-f]{12}$/;

/** A plan that is not there (deleted, expired, or never made). */
export function notFound(planId: string): BlackboardError {
  return new BlackboardError(
    'NOT_FOUND',
    `There is no plan "${planId}" (it may have been deleted or expired). Use {tool:plan_list} to see the plans.`,
    { planId },
  );
}

export function checkPlanId(planId: string): string {
  if (typeof planId !== 'string' || !PLAN_ID_RE.test(planId)) {
    throw invalid('planId is not a plan id (plan-xxxxxxxxxxxx). Use one returned by {tool:plan_create} or {tool:plan_list}.', {
      planId: String(planId).slice(0, 80),
      path: 'planId',
    });
  }
  return planId;
}
