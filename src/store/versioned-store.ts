import { BlackboardError, invalid, storeUnavailable } from '../errors.js';
import { applyUpdate, type UpdateOp } from './ops.js';
import type { Backend, BackendTx, Json, RangeQuery, StoredRecord, Writes } from './types.js';

/** A live record as services see it. */
export interface Entry {
  value: Json;
  version: number;
  /** the store revision that wrote it: tells a rewrite from a delete-and-recreate that reached the same version */
  revision: number;
  updatedAt: number;
  updatedBy: string;
  expiresAt?: number;
}

export interface WriteOptions {
  /** the agent name recorded as `updatedBy` */
  by: string;
  /** compare-and-set: the version the key must have now; `0` = must not exist */
  ifVersion?: number;
  /** expiry; `undefined` keeps none on set and keeps the current expiry on update */
  ttlMs?: number;
}

export interface StoreOptions {
  /** largest value accepted, as UTF-8 JSON bytes */
  maxValueBytes?: number;
  /** deepest nesting accepted */
  maxDepth?: number;
  /** how often expired records are swept (0 = never) */
  sweepIntervalMs?: number;
}

export interface WaitResult {
  entry: Entry | undefined;
  timedOut: boolean;
}

const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024;
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

const toEntry = (record: StoredRecord): Entry => ({
  value: record.v,
  version: record.ver,
  revision: record.rev,
  updatedAt: record.at,
  updatedBy: record.by,
  ...(record.exp !== undefined ? { expiresAt: record.exp } : {}),
});

const live = (record: StoredRecord | undefined, now: number): StoredRecord | undefined =>
  record && (record.exp === undefined || record.exp > now) ? record : undefined;

/**
 * The writes of one transaction, decided from reads made under the store's write lock. Reads see the
 * transaction's own earlier writes. Nothing is applied unless the whole function returns.
 */
export class StoreTx {
  readonly writes: Writes = new Map();
  readonly now = Date.now();

  constructor(
    private readonly tx: BackendTx,
    /** the revision before this transaction; its writes carry `revision + 1` */
    readonly revision: number,
    private readonly limits: { maxValueBytes: number; maxDepth: number },
  ) {}

  async get(key: string): Promise<Entry | undefined> {
    const record = await this.record(key);
    return record && toEntry(record);
  }

  /** Writes `value` and returns the new entry; fails with VERSION_CONFLICT when `ifVersion` does not match. */
  async set(key: string, value: Json, options: WriteOptions): Promise<Entry> {
    const current = await this.record(key);
    checkVersion(current, options.ifVersion);
    return this.put(key, value, current, options.by, options.ttlMs !== undefined ? this.now + options.ttlMs : undefined);
  }

  /** Atomic read-modify-write; keeps the current expiry unless `ttlMs` is given. */
  async update(key: string, op: UpdateOp, operand: Json, options: WriteOptions): Promise<Entry> {
    this.checkValue(operand);
    const current = await this.record(key);
    checkVersion(current, options.ifVersion);
    const value = applyUpdate(op, current?.v, operand);
    const exp = options.ttlMs !== undefined ? this.now + options.ttlMs : current?.exp;
    return this.put(key, value, current, options.by, exp);
  }

  /** Deletes the key; `false` when it did not exist. */
  async delete(key: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    const current = await this.record(key);
    checkVersion(current, options.ifVersion);
    if (!current) return false;
    this.writes.set(key, null);
    return true;
  }

  /** Runs `fn`; if it throws, the writes it made are undone (earlier writes of the transaction stay) and it rethrows. */
  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    const before = new Map(this.writes);
    try {
      return await fn();
    } catch (error) {
      this.writes.clear();
      for (const [key, record] of before) this.writes.set(key, record);
      throw error;
    }
  }

  /** Live records of a range, as committed before this transaction (its own writes are not merged in). */
  async list(query: Omit<RangeQuery, 'now'>): Promise<Array<[string, Entry]>> {
    const rows = await this.tx.list({ ...query, now: this.now });
    return rows.map(([key, record]) => [key, toEntry(record)]);
  }

  /** Deletes every live record of `[lo, hi)`; returns how many. */
  async deleteRange(lo: string, hi: string): Promise<number> {
    let count = 0;
    let after: string | undefined;
    for (;;) {
      const page = await this.tx.list({ lo, hi, after, limit: 500, now: this.now });
      for (const [key] of page) this.writes.set(key, null);
      count += page.length;
      if (page.length < 500) return count;
      after = page[page.length - 1][0];
    }
  }

  /**
   * Puts an entry exactly as given — value, version, time, author, expiry — for checkpoint restores and imports.
   * The size bound is the caller's to apply: checkpoint documents are internal and may exceed it.
   */
  putEntry(key: string, entry: Omit<Entry, 'revision'>): void {
    this.writes.set(key, {
      v: entry.value,
      ver: entry.version,
      rev: this.revision + 1,
      at: entry.updatedAt,
      by: entry.updatedBy,
      ...(entry.expiresAt !== undefined ? { exp: entry.expiresAt } : {}),
    });
  }

  /** Bounds a value by size and depth; throws VALUE_TOO_LARGE or INVALID_ARGUMENT. */
  checkValue(value: Json): number {
    if (value === undefined) throw invalid('value is required: any JSON value (null included).');
    checkDepth(value, this.limits.maxDepth);
    const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
    if (bytes > this.limits.maxValueBytes) {
      throw new BlackboardError(
        'VALUE_TOO_LARGE',
        `The value is ${bytes} bytes; the limit is ${this.limits.maxValueBytes}. Store a smaller value or split it over several keys.`,
        { bytes, maxValueBytes: this.limits.maxValueBytes },
      );
    }
    return bytes;
  }

  private put(key: string, value: Json, current: StoredRecord | undefined, by: string, exp?: number): Entry {
    this.checkValue(value);
    const record: StoredRecord = {
      v: value,
      ver: (current?.ver ?? 0) + 1,
      rev: this.revision + 1,
      at: this.now,
      by,
      ...(exp !== undefined ? { exp } : {}),
    };
    this.writes.set(key, record);
    return toEntry(record);
  }

  private async record(key: string): Promise<StoredRecord | undefined> {
    if (this.writes.has(key)) return this.writes.get(key) ?? undefined;
    return live(await this.tx.get(key), this.now);
  }
}

function checkVersion(current: StoredRecord | undefined, ifVersion: number | undefined): void {
  if (ifVersion === undefined) return;
  const currentVersion = current?.ver ?? 0;
  if (currentVersion !== ifVersion) {
    throw new BlackboardError(
      'VERSION_CONFLICT',
      ifVersion === 0
        ? `The key already exists at version ${currentVersion}. Read it, then retry with ifVersion: ${currentVersion} if you still want to write.`
        : `Expected version ${ifVersion} but the current version is ${currentVersion}${currentVersion === 0 ? ' (the key does not exist)' : ''}. Read the current value, reconcile, and retry with ifVersion: ${currentVersion}.`,
      { currentVersion },
    );
  }
}

function checkDepth(value: Json, maxDepth: number): void {
  const stack: Array<[Json, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > maxDepth) throw invalid(`The value nests deeper than ${maxDepth} levels; flatten it.`, { maxDepth });
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
}

/** In-process wake-ups by storage key, plus the backend's signal that another process committed. */
class ChangeFeed {
  private readonly listeners = new Map<string, Set<() => void>>();
  private count = 0;
  private stopForeign?: () => void;

  constructor(private readonly backend: Backend) {}

  subscribe(key: string, listener: () => void): () => void {
    let set = this.listeners.get(key);
    if (!set) this.listeners.set(key, (set = new Set()));
    set.add(listener);
    if (this.count++ === 0) this.stopForeign = this.backend.onForeignCommit(() => this.publishAll());
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(key);
      if (--this.count === 0) {
        this.stopForeign?.();
        this.stopForeign = undefined;
      }
    };
  }

  publish(keys: Iterable<string>): void {
    for (const key of keys) for (const listener of [...(this.listeners.get(key) ?? [])]) listener();
  }

  private publishAll(): void {
    for (const set of [...this.listeners.values()]) for (const listener of [...set]) listener();
  }
}

/**
 * Versioned records over a {@link Backend}: compare-and-set, atomic updates, all-or-none transactions, TTL,
 * idempotent retries, a store-wide revision and a change feed for blocking waits. Knows nothing of MCP, scopes
 * or agents: callers hand it storage keys.
 */
export class VersionedStore {
  private readonly feed: ChangeFeed;
  private readonly limits: { maxValueBytes: number; maxDepth: number };
  private readonly sweeper?: NodeJS.Timeout;

  constructor(
    readonly backend: Backend,
    options: StoreOptions = {},
  ) {
    this.feed = new ChangeFeed(backend);
    this.limits = { maxValueBytes: options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES, maxDepth: options.maxDepth ?? 64 };
    const sweepMs = options.sweepIntervalMs ?? 60_000;
    if (sweepMs > 0) {
      this.sweeper = setInterval(() => void this.sweep().catch(() => {}), sweepMs);
      this.sweeper.unref();
    }
  }

  async get(key: string): Promise<Entry | undefined> {
    const record = await this.io('read', () => this.backend.get(key));
    const current = live(record, Date.now());
    return current && toEntry(current);
  }

  /** A consistent page of live entries of a key range, in key order, with the revision it was read at. */
  async list(query: Omit<RangeQuery, 'now'>): Promise<{ entries: Array<[string, Entry]>; revision: number }> {
    const { rows, revision } = await this.io('list', () => this.backend.list({ ...query, now: Date.now() }));
    return { entries: rows.map(([key, record]) => [key, toEntry(record)]), revision };
  }

  async revision(): Promise<number> {
    return this.io('read the revision', () => this.backend.revision());
  }

  /**
   * Runs `fn` atomically under the store's write lock (across processes for shared backends). With an
   * `idempotencyKey`, a repeat of a call that already succeeded returns the first result and applies nothing.
   */
  async transact<T extends Json | object>(
    fn: (tx: StoreTx) => Promise<T>,
    options: { idempotencyKey?: string; prefetch?: string[] } = {},
  ): Promise<{ result: T; revision: number }> {
    const { idempotencyKey } = options;
    const prefetch = [...(options.prefetch ?? []), ...(idempotencyKey !== undefined ? [idempotencyKey] : [])];
    type Outcome = { fresh: T } | { replay: { result: T; revision: number } };
    let written: Writes | undefined;
    const outcome = await this.io('write', () =>
      this.backend.transaction<Outcome>(async (btx, revision) => {
        const tx = new StoreTx(btx, revision, this.limits);
        if (idempotencyKey !== undefined) {
          const seen = live(await btx.get(idempotencyKey), tx.now);
          if (seen) return { result: { replay: seen.v as unknown as { result: T; revision: number } }, writes: new Map() };
        }
        const result = await fn(tx);
        if (idempotencyKey !== undefined && tx.writes.size > 0) {
          tx.writes.set(idempotencyKey, {
            v: { result, revision: revision + 1 } as unknown as Json,
            ver: 1,
            rev: revision + 1,
            at: tx.now,
            by: 'idempotency',
            exp: tx.now + IDEMPOTENCY_TTL_MS,
          });
        }
        written = tx.writes;
        return { result: { fresh: result }, writes: tx.writes };
      }, prefetch),
    );
    if (written && written.size > 0) this.feed.publish(written.keys());
    if ('replay' in outcome.result) return outcome.result.replay;
    return { result: outcome.result.fresh, revision: outcome.revision };
  }

  /**
   * Resolves when `ready(entry)` holds for the key's live entry (`undefined` when absent), re-checking after every
   * change to the key in this process, every commit by another process, and the entry's expiry. Gives up with
   * `timedOut: true` after `timeoutMs`; rejects when `signal` aborts.
   */
  async waitUntil(
    key: string,
    ready: (entry: Entry | undefined) => boolean,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<WaitResult> {
    const deadline = Date.now() + options.timeoutMs;
    let dirty = false;
    let wake: (() => void) | undefined;
    const unsubscribe = this.feed.subscribe(key, () => {
      dirty = true;
      wake?.();
    });
    try {
      for (;;) {
        dirty = false;
        const entry = await this.get(key);
        if (ready(entry)) return { entry, timedOut: false };
        if (options.signal?.aborted) throw new Error('The request was cancelled.');
        const remaining = deadline - Date.now();
        if (remaining <= 0) return { entry, timedOut: true };
        if (dirty) continue;
        const untilExpiry = entry?.expiresAt !== undefined ? Math.max(1, entry.expiresAt - Date.now() + 1) : Infinity;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.min(remaining, untilExpiry));
          const onAbort = (): void => done();
          options.signal?.addEventListener('abort', onAbort, { once: true });
          function done(): void {
            clearTimeout(timer);
            options.signal?.removeEventListener('abort', onAbort);
            wake = undefined;
            resolve();
          }
          wake = done;
        });
      }
    } finally {
      unsubscribe();
    }
  }

  /** Removes expired records now (they are already invisible); returns how many. */
  async sweep(limit = 1000): Promise<number> {
    return this.io('sweep', () => this.backend.sweepExpired(Date.now(), limit));
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    await this.backend.close();
  }

  private async io<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw error instanceof BlackboardError ? error : storeUnavailable(error, what);
    }
  }
}
