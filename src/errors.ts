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
  | 'REVISION_COMPACTED';

/**
 * The one error type of the project. Services throw it; the tool layer renders it as an MCP error result
 * (`isError: true`, no `structuredContent`, one text content holding `{"error": {code, message, details?}}`).
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

/** Turns a failure of the storage layer (driver error, closed connection, I/O error) into STORE_UNAVAILABLE. */
export function storeUnavailable(cause: unknown, what: string): BlackboardError {
  if (cause instanceof BlackboardError) return cause;
  const reason = cause instanceof Error ? cause.message : String(cause);
  const code = (cause as { code?: unknown } | null)?.code;
  return new BlackboardError(
    'STORE_UNAVAILABLE',
    `The store could not ${what}: ${reason}. Nothing was changed by this call; retry later or ask the operator to check the store.`,
    typeof code === 'string' ? { cause: code } : undefined,
  );
}
