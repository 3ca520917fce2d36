/**
 * The storage seam. A backend knows how to keep records under string keys, sort them, and apply a set of writes
 * atomically under a store-wide lock; everything with meaning (versions, compare-and-set, atomic operations, TTL,
 * idempotency, watch) is built once on top of it in {@link VersionedStore}. A backend for Redis or Postgres implements
 * this interface and then passes the same contract suite (`test/contract`).
 */

/** A JSON value as agents send it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What is kept for one key. Field names are short because every record carries them. */
export interface StoredRecord {
  /** the value */
  v: Json;
  /** per-key version: 1 on create, +1 on each write */
  ver: number;
  /** the store revision of the transaction that wrote this record */
  rev: number;
  /** updatedAt, epoch milliseconds */
  at: number;
  /** updatedBy, the agent name */
  by: string;
  /** expiry, epoch milliseconds; an expired record is treated as absent */
  exp?: number;
}

/** A half-open key range `[lo, hi)` read in key order, starting after `after` when given. */
export interface RangeQuery {
  lo: string;
  hi: string;
  after?: string;
  limit: number;
  /** records with `exp <= now` are skipped */
  now: number;
}

/** The reads a transaction may make; they see the latest committed state under the write lock. */
export interface BackendTx {
  get(key: string): Promise<StoredRecord | undefined>;
  list(query: RangeQuery): Promise<Array<[string, StoredRecord]>>;
}

/** A write to apply at commit: a record to put, or `null` to delete. */
export type Writes = Map<string, StoredRecord | null>;

export interface Backend {
  /** How the store is named to people (an absolute path for SQLite). */
  readonly description: string;
  /** A committed read (expired records included; the caller filters). Never sees an uncommitted transaction. */
  get(key: string): Promise<StoredRecord | undefined>;
  /** A committed, consistent read of a key range in key order (expired records skipped), with the revision. */
  list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }>;
  /** The store-wide revision: bumped once by every transaction that writes. */
  revision(): Promise<number>;
  /**
   * Runs `fn` holding the store's exclusive write lock (across processes where the backend is shared), then applies
   * the writes it returns together with `revision + 1`, all or none. `fn` decides the writes from its reads; if it
   * throws, nothing is applied. Returns what `fn` returned and the revision after commit. `prefetch` names keys `fn`
   * will read, so a backend can fetch them together with the revision (one round trip instead of two).
   */
  transaction<T>(
    fn: (tx: BackendTx, revision: number) => Promise<{ result: T; writes: Writes }>,
    prefetch?: string[],
  ): Promise<{ result: T; revision: number }>;
  /** Deletes up to `limit` records whose `exp <= now`; returns how many. */
  sweepExpired(now: number, limit: number): Promise<number>;
  /**
   * Calls `listener` (soon, bounded delay) whenever another process or machine commits. Backends that cannot be
   * shared (memory) never call it. Returns an unsubscribe function; with no listener the backend does no work.
   */
  onForeignCommit(listener: () => void): () => void;
  close(): Promise<void>;
}
