// A state_batch's operations, their results, and the errors that name one operation of it.
import { BlackboardError } from '../errors.js';
import type { ResolvedScope } from '../context.js';
import type { UpdateOp } from '../store/ops.js';
import type { Json } from '../store/types.js';

export type BatchOp = {
  op: 'set' | 'delete' | UpdateOp;
  key: string;
  scope?: string;
  value?: Json;
  ifVersion?: number;
  ttlSeconds?: number;
};

export interface BatchItemResult {
  key: string;
  ok: boolean;
  version?: number;
  value?: Json;
  deleted?: boolean;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

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
