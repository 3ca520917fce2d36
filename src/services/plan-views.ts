// What plan tools answer: step and plan views (summary or full), counts, and the steps a change unblocked.
import type { Entry } from '../store/versioned-store.js';
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

export function stepView(step: Step, leaseUntil: Map<string, number>, detail: 'summary' | 'full', chars = SUMMARY_CHARS): StepView {
  const view: StepView = { id: step.id, content: detail === 'full' ? step.content : cut(step.content, chars), status: step.status };
  if (step.owner !== undefined) view.owner = step.owner;
  if (step.blockedBy !== undefined) view.blockedBy = step.blockedBy;
  if (step.attempts) view.attempts = step.attempts;
  if (detail === 'full') {
    if (step.note !== undefined) view.note = step.note;
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
    title: record.title,
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

/** Steps that could not start before and can now: pending, no owner, every blocker done — and not so before. */
export function unblocked(before: Map<string, StepStatus>, record: PlanRecord): string[] {
  const byId = new Map(record.steps.map((s) => [s.id, s]));
  const ready = (statusOf: (id: string) => StepStatus | undefined, s: Step): boolean =>
    (s.blockedBy ?? []).every((id) => statusOf(id) === 'completed' || statusOf(id) === 'skipped');
  return record.steps
    .filter((s) => s.status === 'pending' && s.owner === undefined && (s.blockedBy?.length ?? 0) > 0)
    .filter((s) => ready((id) => byId.get(id)?.status, s) && !ready((id) => before.get(id), s))
    .map((s) => s.id);
}
