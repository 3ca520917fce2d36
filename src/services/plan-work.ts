// A worker's plan tools: plan_claim takes a step under a fenced lease, plan_step moves a step the worker holds.
import { BlackboardError, invalid } from '../errors.js';
import { idempotent, type CallOptions } from '../context.js';
import { checkMover, forgetLost, grant, ownerName, sameHolder } from './plan-claims.js';
import { blockedError, checkStarts, done, stepNotFound, type Step, type StepStatus } from './plan-steps.js';
import { counts, fitWrite, stepView, unblocked, type StepView } from './plan-views.js';
import { checkPlanId, type PlanService } from './plan.js';

/** Why `plan_claim` took nothing: every step is done, waits on unfinished blockers, or is someone's; or the named step is someone's. */
export const CLAIM_REASONS = ['all_done', 'all_blocked', 'all_taken', 'taken'] as const;
export type ClaimReason = (typeof CLAIM_REASONS)[number];
/** The statuses a worker moves its step to. */
export const WORK_STATUSES = ['in_progress', 'completed', 'skipped', 'pending'] as const;
export type WorkStatus = (typeof WORK_STATUSES)[number];

export interface ClaimResult {
  claimed: boolean;
  step?: StepView;
  claim?: { fence: number; leaseUntil: string };
  reason?: ClaimReason;
}

export interface StepResult {
  planId: string;
  version: number;
  step: StepView;
  done: number;
  total: number;
  unblocked: string[];
}

/**
 * Claims and step moves. The holder of a claim is the caller's (agent, thread); it keeps the claim while it shows
 * life (any tool call) within the claim lease. Each grant takes the plan's next fence.
 */
export class PlanWork {
  constructor(private readonly plans: PlanService) {}

  /**
   * Takes the named step, or the first pending step that has no other owner and whose blockers are all completed or
   * skipped, in one transaction. Nothing to take is `claimed: false` with a reason, not an error. A caller that
   * has used up a budget of its thread or an ancestor takes nothing new (LIMIT_REACHED).
   */
  async claim(args: { planId: string; stepId?: string; idempotencyKey?: string }, call: CallOptions): Promise<ClaimResult> {
    const planId = checkPlanId(args.planId);
    const { session, presence } = this.plans;
    const holder = presence.holder();
    // Budgets only grow, so whether one is used up is read before the transaction (keeping it small under contention).
    const spent = await this.plans.spent();
    const { result } = await this.plans.store.transact(
      async (tx): Promise<ClaimResult> => {
        await presence.renewIn(tx);
        const { current, record, leaseUntil, lapsed } = await this.plans.loadIn(tx, planId);
        if (record.status !== 'active') {
          throw new BlackboardError(
            'INVALID_TRANSITION',
            `Plan ${planId} is ${record.status}; only an active plan's steps can be claimed.`,
            { planId, status: record.status },
          );
        }
        const byId = new Map(record.steps.map((s) => [s.id, s]));
        const waitingOn = (s: Step): string[] => (s.blockedBy ?? []).filter((id) => !done(byId.get(id)));
        const mine = (s: Step): boolean => s.owner === undefined || s.owner === ownerName(holder);
        let step: Step | undefined;
        if (args.stepId !== undefined) {
          step = byId.get(args.stepId);
          if (!step) throw stepNotFound(record, args.stepId);
          if (step.claim && sameHolder(step.claim, holder)) {
            const claim = { fence: step.claim.fence, leaseUntil: iso(leaseUntil.get(step.id)!) };
            return fitWrite((chars) => ({ claimed: true, step: stepView(step!, leaseUntil, 'write', chars), claim }));
          }
          if (!done(step) && (step.status === 'in_progress' || !mine(step)))
            return fitWrite((chars) => ({ claimed: false, step: stepView(step!, leaseUntil, 'summary', chars), reason: 'taken' }));
          if (step.status !== 'pending') {
            throw new BlackboardError('INVALID_TRANSITION', `Step ${step.id} is ${step.status}; only a pending step can be claimed.`, {
              stepId: step.id,
              status: step.status,
            });
          }
          const blockers = waitingOn(step);
          if (blockers.length > 0) throw blockedError(step, blockers);
        } else {
          step = record.steps.find((s) => s.status === 'pending' && mine(s) && waitingOn(s).length === 0);
          if (!step) {
            const open = record.steps.filter((s) => !done(s));
            const reason =
              open.length === 0
                ? 'all_done'
                : open.some((s) => s.status === 'blocked' || (s.status === 'pending' && mine(s)))
                  ? 'all_blocked'
                  : 'all_taken';
            // claims that lapsed are stored now, so the board and every reader see the step back in the queue
            if (lapsed.length > 0) await this.plans.saveIn(tx, planId, record, current.version);
            return { claimed: false, reason };
          }
        }
        if (spent) throw spent;
        const claim = grant(record, step, holder, tx.now, presence.leaseMs);
        await this.plans.saveIn(tx, planId, record, current.version);
        leaseUntil.set(step.id, tx.now + claim.leaseMs);
        const taken = step;
        return fitWrite((chars) => ({
          claimed: true,
          step: stepView(taken, leaseUntil, 'write', chars),
          claim: { fence: claim.fence, leaseUntil: iso(tx.now + claim.leaseMs) },
        }));
      },
      { ...idempotent(session.identity, call, args), prefetch: [this.plans.key(planId), presence.key(holder)] },
    );
    return result;
  }

  /**
   * Moves a step: `in_progress` (takes a free step, or renews the caller's claim), `completed`, `skipped`, or
   * `pending` (gives it back). Only the holder moves a claimed step (FORBIDDEN for others, CLAIM_LOST for a holder
   * whose claim lapsed and was given to another, or whose `fence` is not the current one).
   */
  async step(
    args: { planId: string; stepId: string; status: WorkStatus; note?: string; fence?: number; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<StepResult> {
    const planId = checkPlanId(args.planId);
    if (!(WORK_STATUSES as readonly string[]).includes(args.status))
      throw invalid(`status must be one of: ${WORK_STATUSES.join(', ')}.`, { status: args.status, path: 'status' });
    if (args.fence !== undefined && (!Number.isSafeInteger(args.fence) || args.fence < 1))
      throw invalid('fence must be a whole number, 1 or more.', { fence: args.fence, path: 'fence' });
    const { session, presence } = this.plans;
    const holder = presence.holder();
    // Budgets only grow, so whether one is used up is read before the transaction (keeping it small under contention).
    const spent = args.status === 'pending' ? undefined : await this.plans.spent();
    const { result } = await this.plans.store.transact(
      async (tx): Promise<StepResult> => {
        await presence.renewIn(tx);
        const { current, record, leaseUntil } = await this.plans.loadIn(tx, planId);
        const step = record.steps.find((s) => s.id === args.stepId);
        if (!step) throw stepNotFound(record, args.stepId);
        const before = new Map(record.steps.map((s) => [s.id, s.status]));
        const mover = checkMover(step, holder, args.fence);
        const target: StepStatus = args.status;
        if (done(step) && !(step.status === target && step.owner === ownerName(holder))) {
          throw new BlackboardError(
            'INVALID_TRANSITION',
            `Step ${step.id} is already ${step.status}${step.owner ? ` (by ${step.owner})` : ''}; {tool:plan_step} moves open steps. Take another with {tool:plan_claim}.`,
            { stepId: step.id, status: step.status },
          );
        }
        if (
          mover !== 'holder' &&
          step.owner !== undefined &&
          step.owner !== ownerName(holder) &&
          (step.status === 'in_progress' || target !== 'pending')
        ) {
          throw new BlackboardError(
            'FORBIDDEN',
            `Step ${step.id} is assigned to ${step.owner}; take a step of your own with {tool:plan_claim}. Nothing was changed.`,
            { stepId: step.id, owner: step.owner },
          );
        }
        // new work for a spent caller: taking a step it does not hold, or finishing one it never held (a lapsed claim
        // nobody was granted since is still the caller's to finish)
        const finishing = mover === 'holder' || (mover === 'retaken' && target !== 'in_progress');
        if (spent && !finishing && target !== 'pending' && !done(step)) throw spent;
        if (target === 'in_progress') {
          if (mover === 'holder') step.claim!.at = tx.now;
          else {
            if (step.status !== 'pending')
              throw new BlackboardError('INVALID_TRANSITION', `Step ${step.id} is ${step.status}; only a pending step can be taken.`, {
                stepId: step.id,
                status: step.status,
              });
            grant(record, step, holder, tx.now, presence.leaseMs, mover === 'retaken');
          }
          leaseUntil.set(step.id, tx.now + step.claim!.leaseMs);
        } else {
          delete step.claim;
          if (target === 'pending') delete step.owner;
          else step.owner = ownerName(holder);
          step.status = target;
          forgetLost(step, holder);
        }
        if (args.note !== undefined) step.note = args.note;
        checkStarts(record.steps, before);
        const entry = await this.plans.saveIn(tx, planId, record, current.version);
        const freed = unblocked(before, record);
        return fitWrite((chars) => ({
          planId,
          version: entry.version,
          step: stepView(step, leaseUntil, 'write', chars),
          ...counts(record),
          unblocked: freed,
        }));
      },
      { ...idempotent(session.identity, call, args), prefetch: [this.plans.key(planId), presence.key(holder)] },
    );
    return result;
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();
