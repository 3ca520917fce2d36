// The run-scope write rule (writes to scope "run" go to the thread's current run, and stop once it has finished), and
// who may write a plan of a thread, run or parent scope.
import { runOfScope, runScopeId } from '../context.js';
import type { StoreTx } from '../store/versioned-store.js';
import { BlackboardError } from '../errors.js';
import { lifecycleOf, runOver, type LifecycleService } from './lifecycle.js';
import { checkThreadWrite } from './ownership.js';
import type { Session } from './session.js';
import { runOf } from './thread-info.js';

/** Checked inside every kv write's transaction, before the write. */
export type WriteGuard = (scope: { id: string }, tx: StoreTx) => Promise<void>;

/**
 * A write to a run scope is refused with RUN_FINISHED when the thread has moved to a new run since the call named it
 * (the caller retries and lands in the current run), or when the run is `finished`. A write to another thread's scope
 * (`thread:ID`) follows the thread ownership rule.
 */
export function runScopeGuard(session: Session, lifecycle: LifecycleService): WriteGuard {
  return async (scope, tx) => {
    if (scope.id.startsWith('thread:')) await checkThreadWrite(session, (key) => tx.get(key), scope.id.slice('thread:'.length));
    const run = runOfScope(scope.id);
    // the run the key was made in, not the one the connection may have moved on to since
    if (run !== undefined) await lifecycle.assertActive(tx, run);
  };
}

/**
 * The same rule for a plan made in a run scope, whoever changes it: changing it (its title, status or steps, or
 * deleting it) is RUN_FINISHED once its run is not its thread's current run, or has finished. Read inside the write's
 * transaction.
 */
async function checkRunPlanWrite(session: Session, tx: StoreTx, label: string): Promise<void> {
  // the plan's thread as the label names it (a thread id may hold ":", a run id never does)
  const thread = runOfScope(label)?.thread;
  if (thread === undefined) return;
  const runs = runScopeId(thread, '');
  const current = await runOf(tx, session.keys, thread);
  const lifecycle = lifecycleOf((await tx.get(session.keys.lifecycle(thread)))?.value);
  // ended by run_end (in any state), or moved to `finished` by agent_state_set, as the run-scope writes' rule
  const ended = runOver(lifecycle, current);
  const over =
    label !== runScopeId(thread, current)
      ? `is not the current run of thread ${thread}`
      : ended
        ? `has ended (${lifecycle?.state})`
        : undefined;
  if (over !== undefined) {
    const next = ended ? 'Begin a new run with {tool:run_start}' : 'Make a new plan in this run';
    throw new BlackboardError(
      'RUN_FINISHED',
      `This plan belongs to run ${label.slice(runs.length)}, which ${over}: its plans no longer change. Nothing was changed. ${next}, or make the plan in scope thread to outlive runs.`,
      { scope: label },
    );
  }
}

/**
 * Who may write a plan itself (make or delete it, its title, status or step list, take a step from its holder), by
 * the scope it was made in, as keys of that scope are written: a plan of another thread's scope (thread or run)
 * follows the thread ownership rule, a run's also its run's; one of a delegation tree's `parent` scope is written
 * only from a thread of that tree (scope `parent` names the caller's own tree alone).
 */
export async function checkPlanScopeWrite(session: Session, tx: StoreTx, label: string): Promise<void> {
  const root = label.startsWith('parent:') ? label.slice('parent:'.length) : undefined;
  if (root !== undefined && root !== session.identity.rootThread) {
    throw new BlackboardError(
      'FORBIDDEN',
      `This plan was made in scope parent of the delegation tree of thread ${root}; only its threads change the plan itself (title, status, steps, deleting it, taking a step from its holder), and this thread is not one of them. Nothing was changed. You can still read it and claim and report its steps.`,
      { scope: label, rootThread: root },
    );
  }
  const thread = label.startsWith('thread:') ? label.slice('thread:'.length) : runOfScope(label)?.thread;
  if (thread !== undefined) await checkThreadWrite(session, (key) => tx.get(key), thread);
  await checkRunPlanWrite(session, tx, label);
}
