// A replaced run's plans: kept for the workers still reporting into them, then gone after the plan TTL.
import { runOfScope } from '../context.js';
import { lastPart, type Keys } from '../keyspace.js';
import type { StoreTx } from '../store/versioned-store.js';
import { runOf } from './thread-info.js';

/** Index entries read per round trip while a replaced run's plans are given their TTL. */
const PAGE = 500;

/** Whether a plan's scope is a run that another run of its thread has replaced. */
export async function runReplaced(tx: Pick<StoreTx, 'get'>, keys: Keys, scope: string): Promise<boolean> {
  const run = runOfScope(scope);
  return run !== undefined && (await runOf(tx, keys, run.thread)) !== run.run;
}

/**
 * The plans of a run its thread leaves (`run_start`, or a restore of another run's checkpoint): the finished ones
 * already expire; the active ones stay for the workers still reporting their steps, and from now on expire `ttlMs`
 * after their last change like finished ones (every write to them keeps a TTL, see `runReplaced`), instead of being
 * kept for good in a run nobody can reach.
 */
export async function expireReplacedRunPlans(tx: StoreTx, keys: Keys, scopeId: string, ttlMs: number, by: string): Promise<void> {
  const range = keys.planIndexRange(scopeId);
  let after: string | undefined;
  for (;;) {
    const page = await tx.list({ ...range, after, limit: PAGE });
    for (const [indexKey, index] of page) {
      const planKey = keys.plan(lastPart(indexKey));
      const plan = await tx.get(planKey);
      if (plan === undefined || index.expiresAt !== undefined) continue;
      await tx.set(planKey, plan.value, { by, ifVersion: plan.version, ttlMs });
      await tx.set(indexKey, index.value, { by, ttlMs });
    }
    if (page.length < PAGE) return;
    after = page[page.length - 1][0];
  }
}
