// What restoring a checkpoint makes of a plan: the plan as saved, without ever taking back work done or under way.
import { canonicalJson } from '../store/ops.js';
import type { Json } from '../store/types.js';
import { rememberLost } from './plan-claims.js';
import { checkDependencies, decodePlan, type PlanRecord, type Step } from './plan-steps.js';
import { encode } from './records.js';

/**
 * What a restore writes for a plan of the thread, given the plan as saved (`undefined`: made after the save) and as it
 * is now (`undefined`: deleted since): `saved` (the saved record, exactly), `now` (leave it as it is), `none` (remove
 * it), or the record to write.
 *
 * The plan comes back as saved — its title, status, steps, their text, blockers and notes — but work is never taken
 * back: a step that is in progress or completed now stays as it is now (its owner, claim and note), and so does a step
 * claimed at the save (claims are not brought back: a holder's claim is what the holder and its lease say); a plan
 * made since the save that has such a step stays. The plan's fences never go back, and the holders a step remembers
 * as having lost it (who get CLAIM_LOST if they come back) are kept.
 */
export function restoredPlan(saved: Json | undefined, now: Json | undefined): 'saved' | 'now' | 'none' | PlanRecord {
  const was = readable(saved);
  const is = readable(now);
  if (!is) {
    // deleted since (or unreadable now): as saved, but without the claims it had
    if (!was) return saved === undefined ? 'none' : 'saved';
    return was.steps.some((s) => s.claim !== undefined) ? { ...was, steps: was.steps.map(unclaimed) } : 'saved';
  }
  if (!was) return saved === undefined && is.steps.some(working) ? 'now' : saved === undefined ? 'none' : 'saved';
  const current = new Map(is.steps.map((s) => [s.id, s]));
  const steps = was.steps.map((s): Step => {
    const c = current.get(s.id);
    if (c === undefined) return unclaimed(s);
    if (working(c) || s.claim !== undefined) return structuredClone(c);
    // the saved step, with what it remembers of its lost claims as it is now
    const { lost: _lost, forgotten: _forgotten, attempts: _attempts, ...step } = s;
    return { ...structuredClone(step), ...lostOf(c) };
  });
  const savedIds = new Set(was.steps.map((s) => s.id));
  for (const c of is.steps) if (!savedIds.has(c.id) && working(c)) steps.push(structuredClone(c));
  const ids = new Set(steps.map((s) => s.id));
  for (const step of steps) {
    if (step.blockedBy !== undefined) step.blockedBy = step.blockedBy.filter((id) => ids.has(id));
    if (step.blockedBy?.length === 0) delete step.blockedBy;
  }
  try {
    checkDependencies(steps);
  } catch {
    // blockers edited since the save closed a cycle through a kept step: a started or finished step waits on nothing
    for (const step of steps) if (working(step)) delete step.blockedBy;
  }
  const fence = Math.max(was.fence ?? 0, is.fence ?? 0);
  const record: PlanRecord = { ...was, steps, nextStep: Math.max(was.nextStep, is.nextStep), ...(fence > 0 ? { fence } : {}) };
  const text = canonicalJson(encode(record));
  if (text === canonicalJson(now as Json)) return 'now';
  if (text === canonicalJson(saved as Json)) return 'saved';
  return record;
}

/** Work done or under way: a step in progress or completed, or held by a claim. */
const working = (step: Step): boolean => step.status === 'in_progress' || step.status === 'completed' || step.claim !== undefined;

const readable = (value: Json | undefined): PlanRecord | undefined => {
  if (value === undefined) return undefined;
  try {
    return decodePlan(value);
  } catch {
    return undefined;
  }
};

/** What a step remembers of the claims it lost, as it is now. */
const lostOf = (step: Step): Pick<Step, 'lost' | 'forgotten' | 'attempts'> => ({
  ...(step.lost !== undefined ? { lost: structuredClone(step.lost) } : {}),
  ...(step.forgotten !== undefined ? { forgotten: step.forgotten } : {}),
  ...(step.attempts !== undefined ? { attempts: step.attempts } : {}),
});

/** A saved step that is not in the plan now, without the claim it had at the save (its holder remembered as lost). */
function unclaimed(saved: Step): Step {
  const step = structuredClone(saved);
  if (step.claim === undefined) return step;
  rememberLost(step, step.claim);
  delete step.claim;
  delete step.owner;
  step.status = 'pending';
  return step;
}
