// Claims on plan steps: granting with fences, lapsing when the holder stops, and who may move a claimed step.
import { BlackboardError } from '../errors.js';
import { holderId, leaseEnd, type Holder, type PresenceRecord } from './presence.js';
import type { Claim, LostClaim, PlanRecord, Step } from './plan-steps.js';

/**
 * How many holders that lost a step it remembers by name, one entry each (its latest claim): each gets CLAIM_LOST
 * rather than FORBIDDEN or a free step when it comes back. Older ones are not named but counted (`forgotten`).
 */
const LOST_KEPT = 16;

export const sameHolder = (a: Holder, b: Holder): boolean => a.thread === b.thread && (a.agent ?? null) === (b.agent ?? null);
/** A holder as `owner` shows it: its agent name, else its thread. */
export const ownerName = (h: Holder): string => h.agent ?? h.thread;
/** A holder for people, in messages. */
export const holderText = (h: Holder): string => (h.agent !== undefined ? `agent "${h.agent}" (thread ${h.thread})` : `thread ${h.thread}`);
const holderOf = (claim: Claim): Holder =>
  claim.agent !== undefined ? { agent: claim.agent, thread: claim.thread } : { thread: claim.thread };

/** Gives `step` to `holder` with the plan's next fence (a retaken claim keeps its own): in progress, owned by the holder. */
export function grant(record: PlanRecord, step: Step, holder: Holder, now: number, leaseMs: number, retaken = false): Claim {
  // a lapsed claim nobody was granted since, taken back (`retaken`), keeps its fence: it is still the step's latest grant
  const own = retaken ? step.lost?.find((l) => sameHolder(l, holder)) : undefined;
  if (own) step.lost = step.lost!.filter((l) => l !== own);
  if (step.lost?.length === 0) delete step.lost;
  if (!own) record.fence = (record.fence ?? 0) + 1;
  const claim: Claim = { ...holder, fence: own?.fence ?? record.fence!, at: now, leaseMs };
  // the holders that lost the step before cannot simply take it back any more
  for (const lost of step.lost ?? []) lost.superseded = true;
  step.claim = claim;
  step.owner = ownerName(holder);
  step.status = 'in_progress';
  return claim;
}

/** The caller's lapsed claim on `step` is over (it gave the step back or finished it): taking it again is a new grant. */
export function forgetLost(step: Step, holder: Holder): void {
  if (step.lost) step.lost = step.lost.filter((l) => !sameHolder(l, holder));
  if (step.lost?.length === 0) delete step.lost;
}

/** The step's holder stopped: it is pending again, without owner, one attempt more; the holder is remembered as lost. */
function lapse(step: Step): void {
  rememberLost(step, step.claim!);
  delete step.claim;
  delete step.owner;
  step.status = 'pending';
  step.attempts = (step.attempts ?? 0) + 1;
}

/** A claim superseded by a deliberate reassignment: the old holder is remembered as lost. */
export function revoke(step: Step): void {
  if (!step.claim) return;
  rememberLost(step, step.claim, true);
  delete step.claim;
}

/**
 * Remembers the holder of `claim` as having lost `step` (lapsed, or `reassigned`), in place of what the step remembered
 * of it before; past {@link LOST_KEPT} holders the oldest is dropped and its fence kept in `forgotten`.
 */
export function rememberLost(step: Step, claim: Claim, reassigned = false): void {
  const entry: LostClaim = { ...holderOf(claim), fence: claim.fence, ...(reassigned ? { reassigned: true } : {}) };
  const all = [...(step.lost ?? []).filter((l) => !sameHolder(l, entry)), entry];
  const dropped = all.slice(0, -LOST_KEPT);
  if (dropped.length > 0) step.forgotten = Math.max(step.forgotten ?? 0, ...dropped.map((l) => l.fence));
  step.lost = all.slice(-LOST_KEPT);
}

/**
 * Lapses, in place, every claim whose holder has not shown life within its lease, and returns when each remaining
 * claim's lease ends (by step id). A claim younger than its lease is alive without asking (its grant was a sign of
 * life), so a busy plan's writes read no signs of life; `exact` reads them anyway, for the lease end shown to people.
 */
export async function settle(
  record: PlanRecord,
  presenceOf: (holder: Holder) => Promise<PresenceRecord | undefined>,
  now: number,
  exact = false,
): Promise<{ lapsed: string[]; leaseUntil: Map<string, number> }> {
  const seen = new Map<string, PresenceRecord | undefined>();
  const lapsed: string[] = [];
  const leaseUntil = new Map<string, number>();
  for (const step of record.steps) {
    const claim = step.claim;
    if (!claim) continue;
    if (step.status !== 'in_progress') {
      delete step.claim;
      continue;
    }
    if (!exact && claim.at + claim.leaseMs >= now) {
      leaseUntil.set(step.id, claim.at + claim.leaseMs);
      continue;
    }
    const id = holderId(claim);
    if (!seen.has(id)) seen.set(id, await presenceOf(holderOf(claim)));
    const until = leaseEnd(claim.at, claim.leaseMs, seen.get(id), now);
    if (until === undefined) {
      lapse(step);
      lapsed.push(step.id);
    } else {
      leaseUntil.set(step.id, until);
    }
  }
  return { lapsed, leaseUntil };
}

/**
 * Whether `holder` may move `step`: `holder` when it holds the step's live claim, `retaken` when its own claim lapsed
 * and nobody was granted the step since (it simply takes it back), `free` when nobody holds it. Anyone else gets
 * FORBIDDEN naming the holder; a holder whose claim lapsed or was reassigned and since went elsewhere, or whose `fence`
 * is not the current one, gets CLAIM_LOST; so does a caller `moving` a step that lost more holders than it names (it
 * may be one of them). Call after {@link settle}.
 */
export function checkMover(step: Step, holder: Holder, fence?: number, moving = true): 'holder' | 'retaken' | 'free' {
  const claim = step.claim;
  if (claim && sameHolder(claim, holder)) {
    if (fence === undefined || fence === claim.fence) return 'holder';
    const why =
      fence < claim.fence
        ? `fence ${fence} is stale: it is an older grant of step ${step.id}, and the current one is fence ${claim.fence}, held by you`
        : `fence ${fence} is not a grant of step ${step.id} you hold: yours is fence ${claim.fence}`;
    throw lostError(step, why, claim, `Call again with fence ${claim.fence}, or without fence.`);
  }
  // the caller's ended claim this call is about: its latest, when `fence` names it or an earlier grant
  const ended = (step.lost ?? []).find((l) => sameHolder(l, holder) && (fence === undefined || l.fence >= fence));
  if (claim && ended)
    throw lostError(step, `${endedText(step, ended)} and it was given to ${holderText(holderOf(claim))} (fence ${claim.fence})`, claim);
  if (claim) {
    throw new BlackboardError(
      'FORBIDDEN',
      `Step ${step.id} is held by ${holderText(holderOf(claim))}; only its holder moves it. Nothing was changed. Take another step with {tool:plan_claim}, or reassign it deliberately with {tool:plan_update} stepUpdates setting owner.`,
      { stepId: step.id, holder: holderOf(claim), fence: claim.fence },
    );
  }
  if (ended) {
    // a lapsed claim nobody was granted since, on a step still free, is simply taken back
    const newer = ended.superseded || (step.lost ?? []).some((l) => l.fence > ended.fence) || (step.forgotten ?? 0) > ended.fence;
    if (!ended.reassigned && !newer && step.status === 'pending' && step.owner === undefined) {
      if (fence === undefined || fence === ended.fence) return 'retaken';
      // strict: only the lapsed claim itself is taken back, not an older grant of the same holder
      throw lostError(
        step,
        `fence ${fence} is stale: it is an older grant of step ${step.id}, and your latest, fence ${ended.fence}, lapsed (nobody was granted the step since)`,
        undefined,
        `Call again with fence ${ended.fence}, or without fence.`,
      );
    }
    const now = newer && step.status === 'pending' && step.owner === undefined ? 'the step was granted again since' : '';
    throw lostError(step, `${endedText(step, ended)} and ${now || nowText(step)}`, undefined);
  }
  if (fence !== undefined) throw lostError(step, `fence ${fence} is not a current claim on step ${step.id}: ${nowText(step)}`, undefined);
  // more holders lost the step than it names: the caller may be one of them, and only a new grant tells
  if (moving && step.forgotten !== undefined)
    throw lostError(
      step,
      `step ${step.id} was lost by more holders than it remembers by name, so moving it takes a claim of yours`,
      undefined,
    );
  return 'free';
}

/** How the caller's claim ended: it lapsed, or a planner reassigned the step. */
const endedText = (step: Step, ended: LostClaim): string =>
  ended.reassigned
    ? `Your claim on step ${step.id} (fence ${ended.fence}) was taken from you by a deliberate reassignment (stepUpdates setting owner)`
    : `Your claim on step ${step.id} (fence ${ended.fence}) lapsed (no call from you within the claim lease)`;
/** Where a step without a claim is now. */
const nowText = (step: Step): string =>
  step.status === 'pending' && step.owner === undefined
    ? 'nobody holds it now'
    : `the step is ${step.status}${step.owner !== undefined ? `${step.status === 'pending' ? ' for' : ' by'} ${step.owner}` : ''}`;

function lostError(step: Step, why: string, claim: Claim | undefined, next?: string): BlackboardError {
  const free = !claim && step.status === 'pending' && step.owner === undefined;
  return new BlackboardError(
    'CLAIM_LOST',
    `${why[0].toUpperCase()}${why.slice(1)}. Nothing was changed. ${next ?? `${free ? 'Take it again' : 'Drop this step and take another'} with {tool:plan_claim}.`}`,
    { stepId: step.id, holder: claim ? holderOf(claim) : null, fence: claim?.fence ?? null },
  );
}

/**
 * Refuses (INVALID_TRANSITION) to delete a plan holding other agents' work: a step another holds, or one another agent
 * completed. An abandoned or completed plan keeps that work until it expires after the plan TTL.
 */
export function checkNoOthersWork(planId: string, record: PlanRecord, holder: Holder): void {
  const held = (s: Step): boolean => s.claim !== undefined && !sameHolder(s.claim, holder);
  const theirs = record.steps.filter(
    (s) => held(s) || (s.status === 'completed' && s.owner !== undefined && s.owner !== ownerName(holder)),
  );
  if (theirs.length === 0) return;
  const what = theirs.map((s) => `${s.id}: ${held(s) ? `held by ${holderText(s.claim!)}` : `done by ${s.owner}`}`);
  throw new BlackboardError(
    'INVALID_TRANSITION',
    `Plan ${planId} holds other agents' work (${what.join(', ')}); deleting it would drop it. Nothing was changed. ${record.status === 'active' ? 'Mark the plan abandoned with {tool:plan_update}: it' : 'It'} expires after the plan TTL.`,
    { planId, steps: theirs.map((s) => s.id) },
  );
}
