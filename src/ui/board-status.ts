// What each thread is doing, derived from what it does: held claims, recent calls, final answers and its lifecycle.
import { holderId, leaseEnd, type PresenceRecord } from '../services/presence.js';
import type { ClaimedPlan } from './board-claims.js';
import type { PlanView, ThreadView } from './board-views.js';

/** A caller seen within this long is working, whatever its lifecycle says. */
export const RECENT_CALL_MS = 60_000;
/** How many held steps a thread lists (the others are counted in `holdsHidden`). */
export const HOLDS_SHOWN = 20;

/** A claim on a step in progress, and when its lease ends. */
export interface HeldStep {
  planId: string;
  step: string;
  thread: string;
  leaseUntil: number;
}

/** The claims of plans as the board shows them, in their order. */
export const heldSteps = (plans: PlanView[]): HeldStep[] =>
  plans.flatMap((plan) =>
    plan.steps.flatMap((step) =>
      step.claim && step.status === 'in_progress'
        ? [{ planId: plan.planId, step: step.id, thread: step.claim.thread, leaseUntil: step.claim.leaseUntil }]
        : [],
    ),
  );

/** The live claims of `plans` in the board's order of plans (active first, then the most recently changed). */
export function heldOf(plans: ClaimedPlan[], signs: Map<string, PresenceRecord>, now = Date.now()): HeldStep[] {
  const ordered = [...plans].sort((a, b) => Number(b.active) - Number(a.active) || b.updatedAt - a.updatedAt);
  return ordered.flatMap((plan) =>
    plan.claims.flatMap((c) => {
      const leaseUntil = leaseEnd(c.at, c.leaseMs, signs.get(holderId(c)), now);
      return leaseUntil === undefined ? [] : [{ planId: plan.planId, step: c.stepId, thread: c.thread, leaseUntil }];
    }),
  );
}

/**
 * Fills each thread's `activity`, `lastSeen` and `holds` (the first {@link HOLDS_SHOWN}, the others counted) from the
 * plans' live claims (`held`, in the plans' order) and the callers' signs of life, and adds a thread for every caller
 * seen that has no thread records yet (a worker that only claims steps).
 */
export function deriveStatus(threads: ThreadView[], held: HeldStep[], presence: Iterable<PresenceRecord>, now = Date.now()): ThreadView[] {
  const byId = new Map(threads.map((t) => [t.thread, t]));
  for (const sign of presence) {
    let t = byId.get(sign.thread);
    if (!t) {
      t = { thread: sign.thread, state: 'loading', budgets: [], history: [], lastSeq: 0, lastActivity: sign.lastSeen };
      if (sign.agent !== undefined) t.agent = sign.agent;
      byId.set(sign.thread, t);
      threads.push(t);
    }
    if (t.lastSeen === undefined || sign.lastSeen > t.lastSeen) t.lastSeen = sign.lastSeen;
    t.agent ??= sign.agent;
  }
  for (const { planId, step, thread, leaseUntil } of held) {
    const t = byId.get(thread);
    if (!t || leaseUntil <= now) continue;
    t.holds ??= [];
    if (t.holds.length < HOLDS_SHOWN) t.holds.push({ planId, step, leaseUntil });
    else t.holdsHidden = (t.holdsHidden ?? 0) + 1;
  }
  for (const t of threads) t.activity = activityOf(t, now);
  return threads;
}

function activityOf(t: ThreadView, now: number): string {
  const answered = t.finalAnswer !== undefined && (t.run === undefined || t.finalAnswer.run === t.run);
  if (answered || t.state === 'finished') return 'done';
  if (t.state === 'awaiting_user_input') return 'needs input';
  if (t.state === 'error') return 'error';
  if (t.state === 'paused') return 'paused';
  if (t.holds?.length) return 'working';
  if (t.lastSeen !== undefined && now - t.lastSeen < RECENT_CALL_MS) return 'working';
  if (t.state === 'stopped') return 'stopped';
  if (t.state === 'running' && now - t.lastActivity < RECENT_CALL_MS) return 'working';
  return 'quiet';
}
