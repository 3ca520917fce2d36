// The run-scope write rule: writes to scope "run" go to the thread's current run, and stop once it has finished.
import { resolveScope } from '../context.js';
import type { StoreTx } from '../store/versioned-store.js';
import type { LifecycleService } from './lifecycle.js';
import { checkThreadWrite } from './ownership.js';
import type { Session } from './session.js';

/** Checked inside every kv write's transaction, before the write. */
export type WriteGuard = (scope: { id: string }, tx: StoreTx) => Promise<void>;

/**
 * A write to this connection's run scope is refused with RUN_FINISHED when another connection has moved the thread to
 * a new run since (the caller retries and lands in the current run), or when the run is `finished`. A write to
 * another thread's scope (`thread:ID`) follows the thread ownership rule.
 */
export function runScopeGuard(session: Session, lifecycle: LifecycleService): WriteGuard {
  return async (scope, tx) => {
    if (scope.id.startsWith('thread:')) await checkThreadWrite(session, (key) => tx.get(key), scope.id.slice('thread:'.length));
    if (scope.id !== resolveScope('run', session.identity).id) return;
    await lifecycle.assertActive(tx); // the thread's current run, and not finished
  };
}
