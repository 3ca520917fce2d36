// What plan tools answer: step and plan views (summary or full), counts, and the steps a change unblocked.
import { truncate } from '../context.js';
import { BlackboardError, invalid } from '../errors.js';
import { jsonBytes } from '../store/json-text.js';
import type { Entry } from '../store/versioned-store.js';
import { fitPage } from './page-fit.js';
import { done, type PlanRecord, type PlanStatus, type Step, type StepStatus } from './plan-steps.js';

/** A step as tools show it. The summary leaves out notes and claim details and cuts content short. */
export interface StepView {
  id: string;
  content: string;
  status: StepStatus;
  owner?: string;
  blockedBy?: string[];
  note?: string;
  attempts?: number;
  /** the live claim: its holder's thread, fence, and when its lease ends unless the holder shows life */
  claim?: { thread: string; fence: number; leaseUntil: string };
}

export interface PlanView {
  planId: string;
  title: string;
  status: PlanStatus;
  scope: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  updatedBy: string;
  done: number;
  total: number;
  steps: StepView[];
}

/** content is cut to this many characters in a summary (fewer on a long plan, so a summary stays under 16 KiB) */
const SUMMARY_CHARS = 200;
const SUMMARY_BUDGET = 11_000;
/** what a summarised step costs besides its content: id, status, owner and the JSON around them */
const STEP_OVERHEAD = 45;

const cut = (text: string, chars: number): string => (text.length > chars ? `${text.slice(0, chars)}…` : text);

/**
 * A step as a read shows it (`summary`, `full`), or as a write answers it (`write`: the fields of `full`, with the
 * content and note cut as a summary cuts content).
 */
export function stepView(
  step: Step,
  leaseUntil: Map<string, number>,
  detail: 'summary' | 'full' | 'write',
  chars = SUMMARY_CHARS,
): StepView {
  const text = (t: string): string => (detail === 'full' ? t : cut(t, chars));
  const view: StepView = { id: step.id, content: text(step.content), status: step.status };
  if (step.owner !== undefined) view.owner = step.owner;
  if (step.blockedBy !== undefined) view.blockedBy = step.blockedBy;
  if (step.attempts) view.attempts = step.attempts;
  if (detail !== 'summary') {
    if (step.note !== undefined) view.note = text(step.note);
    const until = leaseUntil.get(step.id);
    if (step.claim && until !== undefined)
      view.claim = { thread: step.claim.thread, fence: step.claim.fence, leaseUntil: new Date(until).toISOString() };
  }
  return view;
}

export const counts = (record: PlanRecord): { done: number; total: number } => ({
  done: record.steps.filter(done).length,
  total: record.steps.length,
});

export function planView(
  planId: string,
  record: PlanRecord,
  entry: Entry,
  leaseUntil: Map<string, number>,
  detail: 'summary' | 'full',
): PlanView {
  const chars = Math.max(16, Math.min(SUMMARY_CHARS, Math.floor(SUMMARY_BUDGET / Math.max(1, record.steps.length)) - STEP_OVERHEAD));
  return {
    planId,
    title: detail === 'summary' ? cut(record.title, SUMMARY_CHARS) : record.title,
    status: record.status,
    scope: record.scope,
    version: entry.version,
    createdAt: new Date(record.createdAt).toISOString(),
    updatedAt: new Date(entry.updatedAt).toISOString(),
    updatedBy: entry.updatedBy,
    ...counts(record),
    steps: record.steps.map((s) => stepView(s, leaseUntil, detail, chars)),
  };
}

/**
 * VERSION_CONFLICT for a plan write whose `ifVersion` is not the plan's: with the plan as a summary read shows it
 * (when ≤ 2 KiB of JSON), never the stored record.
 */
export function planConflict(planId: string, record: PlanRecord, entry: Entry, ifVersion: number): BlackboardError {
  const current = planView(planId, record, entry, new Map(), 'summary');
  return new BlackboardError(
    'VERSION_CONFLICT',
    `Expected plan ${planId} at version ${ifVersion} but it is at version ${entry.version}. Read it with {tool:plan_get}, reconcile, and retry with ifVersion: ${entry.version}.`,
    { currentVersion: entry.version, ...(jsonBytes(current) <= 2048 ? { current } : {}) },
  );
}

/** A summary's JSON stays under this many bytes: a longer one is paged, its steps continued with `nextCursor`. */
const SUMMARY_BYTES = 15 * 1024;

/** What plan_get answers: the plan from the step `cursor` names on, a summary paged to stay small, `full` whole. */
export interface PlanPage {
  plan: PlanView;
  nextCursor?: string;
}

/**
 * The page of `view` that starts at the step `cursor` names (the first step without one). A summary keeps steps in
 * plan order while its JSON stays under {@link SUMMARY_BYTES}, and says where the rest start; `full` keeps them all.
 */
export function planPage(view: PlanView, cursor: string | undefined, detail: 'summary' | 'full'): PlanPage {
  const start = cursor === undefined ? 0 : view.steps.findIndex((s) => s.id === cursor);
  if (start < 0) {
    const message = `cursor: plan ${view.planId} has no step "${truncate(String(cursor))}"; read it again without cursor.`;
    throw invalid(message, { path: 'cursor' });
  }
  const steps = view.steps.slice(start);
  if (detail === 'full') return { plan: { ...view, steps } };
  // Each step costs its JSON and a comma; the page keeps room for the cursor it adds.
  const page = fitPage(steps, SUMMARY_BYTES, (step) => jsonBytes(step) + 1, { used: jsonBytes({ plan: { ...view, steps: [] } }) + 32 });
  if (!page.stopped) return { plan: { ...view, steps } };
  return { plan: { ...view, steps: page.kept }, nextCursor: page.next.id };
}

/**
 * Steps that could not start before and can now: pending (free, or waiting for the owner it was given), every blocker
 * done — and not so before.
 */
export function unblocked(before: Map<string, StepStatus>, record: PlanRecord): string[] {
  const byId = new Map(record.steps.map((s) => [s.id, s]));
  const ready = (statusOf: (id: string) => StepStatus | undefined, s: Step): boolean =>
    (s.blockedBy ?? []).every((id) => statusOf(id) === 'completed' || statusOf(id) === 'skipped');
  return record.steps
    .filter((s) => s.status === 'pending' && (s.blockedBy?.length ?? 0) > 0)
    .filter((s) => ready((id) => byId.get(id)?.status, s) && !ready((id) => before.get(id), s))
    .map((s) => s.id);
}

/** A write's reply (plan_claim, plan_step, plan_update) that changed one step stays under this many bytes of JSON. */
const WRITE_BYTES = 1000;
/** `unblocked` keeps at least this many ids, even in the reply of a write that changed many steps */
const UNBLOCKED_KEPT = 10;
/** what a write's reply cuts step texts to: the summary's cut, and shorter ones tried in turn until the reply fits */
const WRITE_CHARS = [SUMMARY_CHARS, 100, 50, 16];

/**
 * A write's reply, kept small: `make(chars)` builds it with step texts cut to `chars`. `unblocked` keeps its first
 * ids (in plan order) while the reply stays under {@link WRITE_BYTES}, at least {@link UNBLOCKED_KEPT}; the texts are
 * cut shorter only when the reply does not fit even so.
 */
export function fitWrite<R extends object>(make: (chars: number) => R): R {
  let reply!: R & { unblocked?: string[] };
  for (const chars of WRITE_CHARS) {
    reply = make(chars);
    const ids = reply.unblocked ?? [];
    if (reply.unblocked !== undefined) reply.unblocked = ids.slice(0, UNBLOCKED_KEPT);
    let bytes = jsonBytes(reply);
    let kept = Math.min(ids.length, UNBLOCKED_KEPT);
    // one more id costs its text and a comma
    while (kept < ids.length && bytes + jsonBytes(ids[kept]) + 1 <= WRITE_BYTES) bytes += jsonBytes(ids[kept++]) + 1;
    if (reply.unblocked !== undefined) reply.unblocked = ids.slice(0, kept);
    if (bytes <= WRITE_BYTES) return reply;
  }
  return reply;
}
