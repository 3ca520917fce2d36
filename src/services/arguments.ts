// Argument checks the services share: versions, timeouts, TTLs and update operations; each error names its argument
// in `details.path`.
import { invalid } from '../errors.js';
import { UPDATE_OPS, type UpdateOp } from '../store/ops.js';

/** How long blocking calls (watch, state_changes, final_answer_get) wait by default, and at most. */
export const WATCH_DEFAULT_MS = 25_000;
export const WATCH_MAX_MS = 600_000;
const MAX_TTL_SECONDS = 10 * 365 * 24 * 3600;

/** A TTL in seconds as milliseconds; `undefined` when none was given. */
export function ttl(ttlSeconds: number | undefined): number | undefined {
  if (ttlSeconds === undefined) return undefined;
  if (typeof ttlSeconds !== 'number' || !(ttlSeconds > 0) || ttlSeconds > MAX_TTL_SECONDS) {
    throw invalid(`ttlSeconds must be a number above 0 and at most ${MAX_TTL_SECONDS} (ten years).`, { path: 'ttlSeconds', ttlSeconds });
  }
  return Math.round(ttlSeconds * 1000);
}

export function checkIfVersion(version: number | undefined, what = 'ifVersion'): void {
  if (version !== undefined && (!Number.isSafeInteger(version) || version < 0)) {
    throw invalid(`${what} must be a whole number, 0 or more (0 = the key must not exist).`, { path: what, [what]: version });
  }
}

/** An update operation of `state_update` and `state_batch`. */
export function checkOp(op: string): asserts op is UpdateOp {
  if (!(UPDATE_OPS as readonly string[]).includes(op)) {
    throw invalid(`Unknown op "${op}". Use one of: ${UPDATE_OPS.join(', ')}.`, { path: 'op' });
  }
}

/** A blocking call's wait, checked against the ten-minute bound. */
export function checkTimeout(value: number | undefined, fallback: number, what: string): number {
  const ms = value ?? fallback;
  if (!Number.isFinite(ms) || ms < 0 || ms > WATCH_MAX_MS) {
    throw invalid(`${what} must be from 0 to ${WATCH_MAX_MS} milliseconds (10 minutes).`, { path: what, [what]: value });
  }
  return ms;
}
