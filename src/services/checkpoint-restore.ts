// What a restore writes: the thread's state as saved, with its budgets, and the work in its plans, as they are now.
import { BlackboardError } from '../errors.js';
import { runScopeId, type Identity } from '../context.js';
import { FAMILY, isFamilyRelative, type Keys } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { StoreTx } from '../store/versioned-store.js';
import { fromSaved, type ThreadDocument } from './checkpoint-document.js';
import { collectState } from './checkpoint-state.js';
import { restoredPlan } from './plan-restore.js';
import { lifecycleOf, runOver } from './lifecycle.js';
import { AnswerRecord } from './finalizer.js';
import { encode } from './records.js';
import { expireReplacedRunPlans } from './run-plans.js';
import { threadInfoOf } from './thread-info.js';

/** The number a record that only moves forward holds (a sequence counter, an acknowledged inbox position), if it is one. */
function forwardOf(relative: string, value: Json | undefined): number | undefined {
  const n = isFamilyRelative(relative, [FAMILY.historySeq, FAMILY.messageSeq])
    ? value
    : isFamilyRelative(relative, [FAMILY.inboxPosition]) && typeof value === 'object' && value !== null && !Array.isArray(value)
      ? value.seq
      : undefined;
  return typeof n === 'number' ? n : undefined;
}

/**
 * Whether a record that only moves forward keeps the value it has now rather than the saved one: a sequence counter (a
 * thread's history, the namespace's messages), whose numbers once given are never given again, or a recipient's
 * acknowledged inbox position, which never moves back — whether restored or imported.
 */
export const counterStays = (relative: string, now: Json | undefined, saved: Json | undefined): boolean => {
  const current = forwardOf(relative, now);
  return current !== undefined && current >= (forwardOf(relative, saved) ?? 0);
};

/**
 * Replaces the thread's state by the document's, and moves the thread to the document's run; returns how many records
 * the document has. Records the document does not have are deleted; the others are rewritten, keeping their version
 * when they are unchanged since the save and continuing above it otherwise (a version never goes back or repeats).
 *
 * The history counter never goes back: when the thread's is further along, it stays (and the next event gets a new
 * number). With `keepWork` (a restore; an import of a document loads it as it is) spending and other agents' work are not
 * undone: the thread's budgets stay as they are now, and each plan keeps the steps in progress or completed now, and
 * its fences (see {@link restoredPlan}); a plan made since the save stays if it has such a step, with its index entry.
 */
export async function restoreState(
  tx: StoreTx,
  keys: Keys,
  who: Identity,
  by: string,
  doc: ThreadDocument,
  options: { keepWork: boolean; planTtlMs: number },
): Promise<number> {
  const { keepWork } = options;
  const { entries } = await collectState(tx, keys, who, doc.thread);
  const current = new Map(entries);
  const budgets = keys.budgetRange(doc.thread);
  // What becomes of each plan, by id: decided once for its record and its index entries.
  const plans = new Map<string, ReturnType<typeof restoredPlan>>();
  if (keepWork) {
    const saved = new Map(Object.entries(doc.records).map(([rel, r]) => [keys.absolute(rel), r.v]));
    for (const key of new Set([...current.keys(), ...saved.keys()])) {
      const planId = keys.planOf(key);
      if (planId !== undefined && key === keys.plan(planId)) plans.set(planId, restoredPlan(saved.get(key), current.get(key)?.value));
    }
  }
  if (keepWork) {
    // A run that ended (run_end) or finished is over: restoring one of its checkpoints would reopen it (and let it
    // answer, spend and write again).
    const lifecycle = lifecycleOf(current.get(keys.lifecycle(doc.thread))?.value);
    if (runOver(lifecycle, doc.run)) {
      throw new BlackboardError(
        'RUN_FINISHED',
        `Run ${doc.run} of thread ${doc.thread} has ended (${lifecycle?.state}), so its checkpoints cannot reopen it. Nothing was changed. Begin a new run with {tool:run_start}, and carry over what you need with the state tools.`,
        { run: doc.run, state: lifecycle?.state },
      );
    }
  }
  const answer = keys.finalAnswer(doc.thread);
  // The thread keeps one answer, its latest run's. A run answers once: the answer of now stays — unless the run
  // restored had answered at the save and the answer of now is another run's, which would leave the restored run
  // free to answer a second time; then its own answer comes back.
  const runOf = (value: Json | undefined): string | undefined => AnswerRecord.safeParse(value).data?.run;
  const answerStays =
    current.has(answer) && !(runOf(doc.records[keys.relative(answer)]?.v) === doc.run && runOf(current.get(answer)?.value) !== doc.run);
  /**
   * Left as it is now: the history counter when not behind the saved one (an import too), and on a restore a budget, a
   * final answer once given (a run answers once), or a plan (with its index entries) that keeps its present record.
   */
  // History numbers never go back: the events after the save go, but the next one takes the number after the
  // highest given (a follower's afterSeq from before the restore still sees it).
  const counter = keys.historyCounter(doc.thread);
  const counterKept = counterStays(keys.relative(counter), current.get(counter)?.value, doc.records[keys.relative(counter)]?.v);
  const kept = (key: string): boolean => {
    if (key === counter && counterKept) return true;
    if (!keepWork) return false;
    if (key >= budgets.lo && key < budgets.hi) return true;
    if (key === answer && answerStays) return true;
    const planId = keys.planOf(key);
    return planId !== undefined && plans.get(planId) === 'now';
  };
  for (const [key] of entries) if (!kept(key) && !Object.hasOwn(doc.records, keys.relative(key))) await tx.delete(key);
  for (const [rel, r] of Object.entries(doc.records)) {
    const key = keys.absolute(rel);
    if (kept(key)) continue;
    const planId = keys.planOf(key);
    const plan = planId !== undefined && key === keys.plan(planId) ? plans.get(planId) : undefined;
    if (typeof plan === 'object') {
      // the saved plan with the work of now: a new version of it, by whoever restored
      const ttlMs = r.exp !== undefined ? Math.max(1, r.exp - tx.now) : undefined;
      await tx.set(key, encode(plan), { by, ...(ttlMs !== undefined ? { ttlMs } : {}) });
    } else {
      await tx.putEntry(key, fromSaved(r));
    }
  }
  const metaKey = keys.threadInfo(doc.thread);
  const meta = threadInfoOf((await tx.get(metaKey))?.value);
  if (meta?.run !== doc.run) {
    await tx.set(metaKey, { ...(meta ?? { root: doc.thread, level: 0, runs: 1 }), run: doc.run } as Json, { by });
    // the run the thread leaves is replaced, as by run_start: the plans it keeps (other agents' work) expire
    if (meta?.run) await expireReplacedRunPlans(tx, keys, runScopeId(doc.thread, meta.run), options.planTtlMs, by);
  }
  return Object.keys(doc.records).length;
}
