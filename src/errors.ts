/** Every error code a tool can return, each with what the caller should do next (README, "Results and errors"). */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'VERSION_CONFLICT'
  | 'MULTIPLE_FINAL_ANSWERS'
  | 'LIMIT_REACHED'
  | 'INVALID_TRANSITION'
  | 'RUN_FINISHED'
  | 'VALUE_TOO_LARGE'
  | 'FORBIDDEN'
  | 'CHECKPOINT_CORRUPT'
  | 'STORE_UNAVAILABLE'
  | 'REVISION_COMPACTED'
  | 'CLAIM_LOST';

/**
 * The one error type of the project: a `code` saying what to do next, a message, and `details` (e.g. `path`, the
 * argument at fault). Services throw it; the library throws it as it is, and the tool layer renders it as an MCP
 * error result (`isError: true`, no `structuredContent`, one text content holding `{"error": {code, message, details?}}`).
 */
export class BlackboardError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'BlackboardError';
  }

  /** The JSON body a client sees. */
  toJSON(): { error: { code: ErrorCode; message: string; details?: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }
}

/**
 * A bad flag, environment value or command line: the CLI prints its one-line message and exits with code 2. Anything
 * else that stops a command is exit code 1.
 */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export const invalid = (message: string, details?: Record<string, unknown>): BlackboardError =>
  new BlackboardError('INVALID_ARGUMENT', message, details);

/**
 * Runs a write of the value an argument holds: an INVALID_ARGUMENT it throws without `details.path` (the store's
 * refusal of a value nested too deep, say) names that argument.
 */
export async function writing<T>(path: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof BlackboardError && error.code === 'INVALID_ARGUMENT' && error.details?.path === undefined)
      throw new BlackboardError(error.code, error.message, { ...error.details, path });
    throw error;
  }
}

/**
 * A storage failure after a write may have reached the database (its COMMIT or script was sent) whose outcome could
 * not be found out within the call's time. Backends throw it; {@link storeUnavailable} words it.
 */
export class WriteFateUnknown extends Error {
  constructor(readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
    this.name = 'WriteFateUnknown';
  }
}

/** A store's error as people read it: without where in a Redis script it happened, nor its own final full stop. */
const causeText = (text: string): string => text.replace(/[.\s]*script: [0-9a-f]{40}, on @user_script:\d+\.*$/, '').replace(/\.+$/, '');

const NOTHING_CHANGED = 'Nothing was changed by this call; retry later or ask the operator to check the store.';

/**
 * A store failure in a call that had already committed its change (`applied` says what it was): never "nothing was
 * changed", and `details.outcome: "applied"`.
 */
export function afterApplied(cause: unknown, what: string, applied: string): BlackboardError {
  const error = storeUnavailable(cause, what);
  if (error.code !== 'STORE_UNAVAILABLE' || error.details?.outcome !== undefined) return error;
  const failed = error.message
    .replace(NOTHING_CHANGED, '')
    .replace(/;\s*nothing was changed\.$/i, '.')
    .trim();
  return new BlackboardError(
    'STORE_UNAVAILABLE',
    `${failed} This call had already applied its change (${applied}), which is kept; retry later to read the rest.`,
    { ...error.details, outcome: 'applied' },
  );
}

/**
 * Turns a failure of the storage layer (driver error, closed connection, I/O error) into STORE_UNAVAILABLE. The one
 * home of its wording: "nothing was changed" only when that is known; a write whose fate is unknown says so, with
 * `details.outcome: "unknown"`, and points at `idempotencyKey`.
 */
export function storeUnavailable(cause: unknown, what: string): BlackboardError {
  if (cause instanceof BlackboardError) return cause;
  const unknown = cause instanceof WriteFateUnknown;
  const inner = unknown ? cause.reason : cause;
  const reason = causeText(inner instanceof Error ? inner.message : String(inner));
  const code = (inner as { code?: unknown } | null)?.code;
  const details: Record<string, unknown> = {};
  if (typeof code === 'string') details.cause = code;
  if (unknown) details.outcome = 'unknown';
  const next = unknown
    ? 'The write may or may not have been applied; retry with the same idempotencyKey (a call without one: read the current state before retrying), or ask the operator to check the store.'
    : NOTHING_CHANGED;
  return new BlackboardError(
    'STORE_UNAVAILABLE',
    `The store could not ${what}: ${reason}. ${next}`,
    Object.keys(details).length > 0 ? details : undefined,
  );
}
