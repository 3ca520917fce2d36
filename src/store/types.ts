/**
 * The storage seam. A backend keeps records under string keys in code-point order, applies a transaction's writes
 * atomically with a revision it stamps at commit, keeps a change log, and tells this process about other processes'
 * commits. Everything with meaning (versions, compare-and-set, tombstones, atomic operations, TTL, idempotency,
 * waits) is built once on top of it in `VersionedStore`. Every backend passes the same contract suite
 * (`test/contract`).
 */

/** A JSON value as agents send it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** What is kept for one key. Field names are short because every record carries them. */
export interface StoredRecord {
  /** the value (`null` in a tombstone) */
  v: Json;
  /** per-key version: never decreases or repeats for a key, across delete and re-create */
  ver: number;
  /** the revision of the commit that wrote this record (stamped by the backend) */
  rev: number;
  /** updatedAt, epoch milliseconds by the store's clock */
  at: number;
  /** updatedBy, the agent name */
  by: string;
  /** expiry, epoch milliseconds; an expired record is treated as absent */
  exp?: number;
  /** a tombstone: the key was deleted at version `ver`. Invisible to reads; kept so that versions never repeat. */
  del?: 1;
}

/** A record as a transaction writes it: the backend adds `rev`, the revision it commits at. */
export type RecordWrite = Omit<StoredRecord, 'rev'>;

/** The keys from `lo` (included) to `hi` (excluded), in code point order. */
export interface KeyRange {
  lo: string;
  hi: string;
}

/** A half-open key range `[lo, hi)` read in key order, starting after `after` when given. */
export interface RangeQuery extends KeyRange {
  after?: string;
  limit: number;
  /** records with `exp <= now` are skipped */
  now: number;
}

/** The reads a transaction may make: the latest committed state (a backend may re-run the transaction if it changes). */
export interface BackendTx {
  /** The raw record, tombstones and expired records included. */
  get(key: string): Promise<StoredRecord | undefined>;
  /** Live records of a range (no tombstones, no expired records), in key order. */
  list(query: RangeQuery): Promise<Array<[string, StoredRecord]>>;
  /** Reads these keys in one round trip, so that the gets of them that follow cost none (remote backends). */
  prefetch?(keys: string[]): Promise<void>;
}

/**
 * One write of a transaction. `record: null` removes the key's record physically (the sweeper uses it for old
 * tombstones and expired records); anything else puts the record. `log: true` also appends the write to the change
 * log as `(revision, key, ver, deleted: record?.del === 1)`; removals are never logged.
 */
export interface Write {
  record: RecordWrite | null;
  log: boolean;
}
export type Writes = Map<string, Write>;

/** What a transaction function is told about the moment it runs in. */
export interface TxContext {
  /** the committed revision the transaction's reads start from */
  revision: number;
  /** the store's clock, epoch milliseconds (the database server's clock for shared backends) */
  now: number;
}

/** A committed write as the change log keeps it. */
export interface ChangeRow {
  revision: number;
  key: string;
  version: number;
  deleted: boolean;
}

/** The change log entries of a key range with revision > `after`, in revision order (then key order). */
export interface ChangeQuery {
  after: number;
  lo: string;
  hi: string;
  limit: number;
}

/**
 * What the backend says another writer committed: the keys of one commit, or `gap` when it may have missed commits
 * (a reconnect, an overflow, a pruned log): then every waiter must re-read.
 */
export type CommitEvent = { revision: number; keys: string[] } | { gap: true };

export interface Backend {
  /** How the store is named to people (an absolute path for SQLite; a URL with the password masked). */
  readonly description: string;
  /** Whether other processes (or machines) can open the same data, so that their commits must be listened for. */
  readonly shared: boolean;

  /** The store's clock: the local clock, or the local clock corrected by the offset measured against the server. */
  now(): number;

  /** A committed read of one raw record (tombstones and expired records included; the caller filters). */
  get(key: string): Promise<StoredRecord | undefined>;
  /** A committed, consistent read of a key range's live records in key order, with the revision it was read at. */
  list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }>;
  /** The latest committed revision: monotonic, bumped by every commit that writes (gaps are allowed). */
  revision(): Promise<number>;

  /**
   * Runs `fn` and applies the writes it returns atomically, all or none, with every put record stamped with the
   * revision of this commit (greater than every revision committed before), and the logged writes appended to the
   * change log in the same commit. If `fn` throws, nothing is applied and the error is rethrown.
   *
   * `fn` may be run more than once: an optimistic backend re-runs it when something it read changed before commit
   * (a locking backend runs it once, holding its write lock). So `fn` must decide its writes from its reads only and
   * have no other effect. A commit that writes nothing does not bump the revision.
   *
   * `prefetch` names keys `fn` will read, and `ranges` key ranges it will list (from their start), so a backend can
   * fetch them with its first round trip (a backend may ignore either).
   * Returns what `fn` returned and the revision after commit (the current one if nothing was written).
   */
  transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch?: string[],
    ranges?: KeyRange[],
  ): Promise<{ result: T; revision: number }>;

  /** Keys of records (live or tombstone) with `exp <= now`, or with `del` and `at <= tombstonesBefore`, up to `limit`. */
  due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]>;

  /**
   * The change log: entries of `[lo, hi)` with revision > `after`, in (revision, key) order, at most `limit`; with
   * the current revision and `compacted`, the highest revision whose entries may have been pruned (0 = none), all
   * from one consistent snapshot: every logged write committed at or below the returned revision is in the log (or
   * pruned, at or below `compacted`). A caller whose `after` is below `compacted` may have missed entries.
   */
  changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }>;
  /** Prunes change log entries committed at or before `before` (store clock, ms), at most `limit`; returns how many. */
  pruneChanges(before: number, limit: number): Promise<number>;

  /**
   * Calls `listener` (soon, bounded delay) with the keys of commits made by other processes or machines, or with a
   * gap when some may have been missed. It may also report this process's own commits; duplicates are harmless.
   * Backends that are not `shared` never call it. Returns an unsubscribe function; with no listener the backend does
   * no work (no timers, no reads), except that one that follows on a connection of its own may go on following for
   * `FOLLOW_LINGER_MS` after the last listener left (see commit-listeners.ts).
   */
  onForeignCommit(listener: (event: CommitEvent) => void): () => void;

  close(): Promise<void>;
}
