// Public types of the kv family: state_get … state_batch, watch, state_changes, and the change feed.
import type { CallOptions, Json } from './options.js';

/** `state_get`: a key of a scope (`global`, `thread`, `run`, `agent`, `agent_type`, … default `global`). */
export interface GetArgs {
  key: string;
  scope?: string;
  /**
   * the most value bytes returned (64 B to 1 MiB): a larger value comes back as a preview, with `truncated` and
   * `bytes`. Without it the library returns the value whole (the tool's default is 16 KiB).
   */
  maxBytes?: number;
}
/** A key as read; `found: false` when absent. */
export interface GetResult {
  found: boolean;
  value?: Json;
  version?: number;
  updatedAt?: string;
  updatedBy?: string;
  /** the value's size as JSON */
  bytes?: number;
  /** the value was larger than `maxBytes`: `value` is a preview */
  truncated?: boolean;
}
/** `state_set`; `ifVersion` makes it conditional (0: the key must not exist). */
export interface SetArgs {
  key: string;
  value: Json;
  scope?: string;
  ifVersion?: number;
  ttlSeconds?: number;
  idempotencyKey?: string;
}
/** A write's new version, and the store revision it committed at. */
export interface SetResult {
  version: number;
  revision: number;
}
/** `state_delete`. */
export interface DeleteArgs {
  key: string;
  scope?: string;
  ifVersion?: number;
  idempotencyKey?: string;
}
/** `deleted: false` when the key was absent. */
export interface DeleteResult {
  deleted: boolean;
  revision: number;
}
/** `state_list`: keys in order; pass `nextCursor` back as `cursor`. */
export interface ListArgs {
  scope?: string;
  prefix?: string;
  cursor?: string;
  limit?: number;
}
/** One page of keys with their versions (no values). */
export interface ListResult {
  /** each key with its version, when it was written, and its value's size as JSON */
  keys: Array<{ key: string; version: number; updatedAt: string; bytes: number }>;
  nextCursor?: string;
}
/** `state_snapshot`: many values in one consistent read, at most `maxBytes`. */
export interface SnapshotArgs {
  scope?: string;
  prefix?: string;
  maxBytes?: number;
  /** a `nextCursor` of the previous page, as returned */
  cursor?: string;
}
/**
 * Values by key, the revision read at, and whether `maxBytes` cut it short (`nextCursor` continues); a value larger
 * than a page alone is listed in `skipped` instead.
 */
export interface SnapshotResult {
  entries: Record<string, Json>;
  revision: number;
  truncated: boolean;
  nextCursor?: string;
  skipped?: Array<{ key: string; bytes: number }>;
}
/** The atomic operations of `state_update`. */
export type UpdateOp = 'increment' | 'append' | 'merge' | 'add_to_set';
/** `state_update`: an atomic change, safe with many writers. */
export interface UpdateArgs {
  key: string;
  op: UpdateOp;
  value: Json;
  scope?: string;
  ifVersion?: number;
  ttlSeconds?: number;
  idempotencyKey?: string;
}
/** The value after the change. */
export interface UpdateResult {
  value: Json;
  version: number;
  revision: number;
}
/** One write of a `state_batch`. */
export interface BatchOp {
  op: 'set' | 'delete' | UpdateOp;
  key: string;
  value?: Json;
  scope?: string;
  ifVersion?: number;
  ttlSeconds?: number;
}
/** `state_batch`: up to 100 writes, all or none (`atomic: false`: each alone). */
export interface BatchArgs {
  ops: BatchOp[];
  atomic?: boolean;
  idempotencyKey?: string;
}
/** The outcome of one write of a batch. */
export interface BatchSlot {
  key: string;
  ok: boolean;
  version?: number;
  value?: Json;
  deleted?: boolean;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}
/** Each write's outcome, in order. */
export interface BatchResult {
  results: BatchSlot[];
  revision: number;
}
/** `watch`: wait until a key exists or, with `afterVersion`, its version differs. Scope `plan` watches a plan. */
export interface WatchArgs {
  key: string;
  scope?: string;
  afterVersion?: number;
  /** how long to wait (default 25 s, at most 10 min) */
  waitMs?: number;
  /** as for `get`: a preview past it; without it the value comes whole */
  maxBytes?: number;
}
/** The key when it changed, or `timedOut: true`. */
export interface WatchResult {
  found: boolean;
  value?: Json;
  version?: number;
  bytes?: number;
  truncated?: boolean;
  timedOut: boolean;
}
/** `state_changes`: the changes after a revision (scope `plan`: plans). */
export interface ChangesArgs {
  afterRevision?: number;
  scope?: string;
  prefix?: string;
  limit?: number;
  /** how long to wait for a change (at most 10 min); without it the library answers at once (the tool waits 25 s) */
  waitMs?: number;
}
/** One change of the feed. */
export interface Change {
  scope: string;
  key: string;
  version: number;
  revision: number;
  deleted: boolean;
}
/** A page of changes; pass `revision` back as `afterRevision`. */
export interface ChangesResult {
  changes: Change[];
  revision: number;
  /** the wait ended with no change */
  timedOut?: boolean;
}
/** What `Blackboard.changes` follows: without `afterRevision`, the changes from the call on (not from the loop's first turn). */
export interface FollowArgs {
  afterRevision?: number;
  scope?: string;
  prefix?: string;
}

/** Scoped, versioned key-value state: the `state_*` tools and `watch`. */
export interface KvApi {
  /** `state_get` */
  get: (args: GetArgs) => Promise<GetResult>;
  /** `state_set`; VERSION_CONFLICT when `ifVersion` does not match */
  set: (args: SetArgs) => Promise<SetResult>;
  /** `state_delete` */
  delete: (args: DeleteArgs) => Promise<DeleteResult>;
  /** `state_list` */
  list: (args?: ListArgs) => Promise<ListResult>;
  /** `state_snapshot` */
  snapshot: (args?: SnapshotArgs) => Promise<SnapshotResult>;
  /** `state_update` */
  update: (args: UpdateArgs) => Promise<UpdateResult>;
  /** `state_batch` */
  batch: (args: BatchArgs) => Promise<BatchResult>;
  /** `watch`: blocks up to `waitMs` (default 25 s) */
  watch: (args: WatchArgs, options?: CallOptions) => Promise<WatchResult>;
  /** `state_changes`: one page (see {@link Blackboard.changes} to follow the feed) */
  changes: (args?: ChangesArgs, options?: CallOptions) => Promise<ChangesResult>;
}
