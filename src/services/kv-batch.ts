// A state_batch's operations, their results, and the errors that name one operation of it.
import { BlackboardError } from '../errors.js';
import type { ResolvedScope } from '../context.js';
import type { BatchOp } from '../api/kv.js';

/** An operation and the outcome of one, as the library's public types state them. */
export type { BatchOp, BatchSlot as BatchItemResult } from '../api/kv.js';

/** An operation checked and resolved: its scope, its storage key, its expiry. */
export type PreparedOp = BatchOp & { resolved: ResolvedScope; storage: string; ttlMs?: number };

/** An atomic batch's version conflict of operation #index against operation #earlier, which writes the same key first. */
export function sameKeyConflict(index: number, earlier: number, op: PreparedOp): BlackboardError {
  return new BlackboardError(
    'VERSION_CONFLICT',
    `Operation #${index} (${op.op} "${op.key}") expects version ${op.ifVersion}, but operation #${earlier} of this batch writes "${op.key}" first, so nothing in the batch was applied. Give ifVersion only to the first operation on a key (read it with {tool:state_get} for its version).`,
    { index, conflictsWith: earlier, path: `ops[${index}].ifVersion` },
  );
}

/** An error of a batch's operation #index, its `details.path` (an argument of the operation) made `ops[index].…`. */
export function inOp(error: BlackboardError, index: number): BlackboardError {
  const path = error.details?.path;
  if (typeof path !== 'string' || path.startsWith('ops[')) return error;
  return new BlackboardError(error.code, error.message, { ...error.details, path: `ops[${index}].${path}` });
}
