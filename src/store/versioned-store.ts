// Versioned records over a backend: transactions with idempotent retries, live reads, the change log, waits, sweeping.
import { BlackboardError, storeUnavailable } from '../errors.js';
import { ChangeFeed } from './change-feed.js';
import { isLoggedKey } from './keys.js';
import { StoreTx, live, toEntry, type Entry, type Limits } from './tx.js';
import type { Backend, ChangeQuery, ChangeRow, Json, KeyRange, RangeQuery, TxContext } from './types.js';

export { StoreTx, type Entry, type WriteOptions } from './tx.js';

/** How long one sweep may go on in batches before it leaves the rest to the next. */
const SWEEP_PASS_MS = 5000;

export interface StoreOptions {
  /** largest value accepted, as UTF-8 JSON bytes */
  maxValueBytes?: number;
  /** deepest nesting accepted */
  maxDepth?: number;
  /** how often expired records, old tombstones and old change log entries are swept (0 = never) */
  sweepIntervalMs?: number;
  /** how long the change log and tombstones are kept (default 24 hours) */
  changeRetentionMs?: number;
  /** whether a key's writes go to the change log (default: data keys, not idempotency or store bookkeeping) */
  logged?: (key: string) => boolean;
}

/**
 * What makes a repeat of an idempotent call the same call: a hash of its operation and arguments. The first call's
 * fingerprint is kept with its result; a later call with the same idempotency key and another hash is refused.
 */
export interface Fingerprint {
  hash: string;
  /** the caller's idempotency key and operation, for the refusal's message */
  key: string;
  operation: string;
}

/**
 * Where an idempotent call's record is kept: a storage key, or one that follows a record the transaction reads —
 * `key` is given that record's value (`undefined` when there is none), read under the transaction, so the call's
 * record is the one current when it commits; `likely`, the key it most likely gives, comes with the first read.
 */
export type IdempotencyKey = string | { from: string; key: (value: Json | undefined) => string; likely: string };

export interface WaitResult {
  entry: Entry | undefined;
  timedOut: boolean;
}

/** What one check of a wait found: `ready` ends the wait; `retryInMs` asks for a re-check even without a change. */
export interface WaitAttempt<R> {
  ready: boolean;
  value: R;
  retryInMs?: number;
}

const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024;
export const DEFAULT_CHANGE_RETENTION_MS = 24 * 3600 * 1000;
const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/**
 * Versioned records over a {@link Backend}: compare-and-set, atomic updates, all-or-none transactions, versions that
 * never repeat (tombstones), TTL, idempotent retries, a revision per commit, a change log and blocking waits that wake
 * only for the keys they wait on. Knows nothing of MCP, scopes or agents: callers hand it storage keys.
 */
export class VersionedStore {
  private readonly feed: ChangeFeed;
  private readonly limits: Limits;
  private readonly sweeper?: NodeJS.Timeout;
  private readonly logged: (key: string) => boolean;
  /** aborted by {@link close}: every later call, and every wait in progress, fails then */
  private readonly closing = new AbortController();
  readonly changeRetentionMs: number;

  constructor(
    readonly backend: Backend,
    options: StoreOptions = {},
  ) {
    this.feed = new ChangeFeed(backend);
    this.limits = { maxValueBytes: options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES, maxDepth: options.maxDepth ?? 64 };
    this.logged = options.logged ?? isLoggedKey;
    this.changeRetentionMs = options.changeRetentionMs ?? DEFAULT_CHANGE_RETENTION_MS;
    const sweepMs = options.sweepIntervalMs ?? 60_000;
    if (sweepMs > 0) {
      this.sweeper = setInterval(() => void this.sweep().catch(() => {}), sweepMs);
      this.sweeper.unref();
    }
  }

  /** The store's clock (epoch ms): the database server's for shared backends. */
  now(): number {
    return this.backend.now();
  }

  async get(key: string): Promise<Entry | undefined> {
    const record = await this.io('read', () => this.backend.get(key));
    const current = live(record, this.now());
    return current && toEntry(current);
  }

  /** A consistent page of live entries of a key range, in key order, with the revision it was read at. */
  async list(query: Omit<RangeQuery, 'now'>): Promise<{ entries: Array<[string, Entry]>; revision: number }> {
    const { rows, revision } = await this.io('list', () => this.backend.list({ ...query, now: this.now() }));
    return { entries: rows.map(([key, record]) => [key, toEntry(record)]), revision };
  }

  async revision(): Promise<number> {
    return this.io('read the revision', () => this.backend.revision());
  }

  /**
   * Runs `fn` atomically (under the backend's write lock, or re-run by an optimistic backend until nothing it read
   * changed — so `fn` must decide from its reads alone). With an `idempotencyKey`, a repeat of a call that already
   * succeeded returns the first result and applies nothing; given a `fingerprint`, a call under the same key with
   * another fingerprint is refused (INVALID_ARGUMENT) and applies nothing.
   */
  async transact<T extends Json | object>(
    fn: (tx: StoreTx) => Promise<T>,
    options: {
      idempotencyKey?: IdempotencyKey;
      fingerprint?: Fingerprint;
      prefetch?: string[];
      /** key ranges `fn` will list from their start, for the backend's first round trip */
      prefetchRanges?: KeyRange[];
    } = {},
  ): Promise<{ result: T; revision: number }> {
    const { idempotencyKey: keyed, fingerprint } = options;
    const prefetch = [...(options.prefetch ?? [])];
    if (typeof keyed === 'string') prefetch.push(keyed);
    else if (keyed !== undefined) prefetch.push(keyed.from, keyed.likely);
    type Outcome = { fresh: T; keys: string[] } | { replay: { result: T; revision: number } };
    const outcome = await this.io('write', () =>
      this.backend.transaction<Outcome>(
        async (btx, context: TxContext) => {
          const tx = new StoreTx(btx, context, this.limits, this.logged);
          const idempotencyKey = typeof keyed === 'object' ? keyed.key((await tx.get(keyed.from))?.value) : keyed;
          if (idempotencyKey !== undefined) {
            const seen = live(await btx.get(idempotencyKey), context.now);
            if (seen) {
              const kept = seen.v as { result?: unknown; fp?: string; op?: string };
              if (fingerprint !== undefined && kept.fp !== undefined && kept.fp !== fingerprint.hash) throw reusedKey(fingerprint, kept.op);
              const first = kept.result as T;
              return { result: { replay: { result: first, revision: seen.rev } }, writes: new Map() };
            }
          }
          const result = await fn(tx);
          if (idempotencyKey !== undefined && tx.writes.size > 0) {
            const kept = fingerprint === undefined ? { result } : { result, fp: fingerprint.hash, op: fingerprint.operation };
            const record = { v: kept as Json, ver: 1, at: context.now, by: 'idempotency', exp: context.now + IDEMPOTENCY_TTL_MS };
            tx.writes.set(idempotencyKey, { record, log: false });
          }
          return { result: { fresh: result, keys: [...tx.writes.keys()] }, writes: tx.writes };
        },
        prefetch,
        options.prefetchRanges,
      ),
    );
    if ('replay' in outcome.result) return outcome.result.replay;
    if (outcome.result.keys.length > 0) this.feed.publish(outcome.result.keys);
    return { result: outcome.result.fresh, revision: outcome.revision };
  }

  /**
   * The change log of a key range after a revision, in revision order. A page never ends inside a revision (its
   * writes come together), so passing the last revision back continues without a gap. `compacted` is the highest
   * revision whose entries may have been pruned: a caller whose `after` is below it may have missed changes.
   */
  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number; more: boolean }> {
    const page = await this.io('read the change log', () => this.backend.changes({ ...query, limit: query.limit + 1 }));
    if (page.changes.length <= query.limit) return { ...page, more: false };
    const last = page.changes[query.limit].revision;
    let rows = page.changes.filter((c) => c.revision < last);
    if (rows.length === 0) {
      // One revision wrote more keys than the limit: return that revision whole rather than split it.
      const whole = await this.io('read the change log', () => this.backend.changes({ ...query, after: last - 1, limit: 1_000_000 }));
      rows = whole.changes.filter((c) => c.revision === last);
    }
    return { changes: rows, revision: rows[rows.length - 1].revision, compacted: page.compacted, more: true };
  }

  /** Calls `listener` after every commit (here or, for shared backends, anywhere) that may have changed `[lo, hi)`. */
  subscribeRange(lo: string, hi: string, listener: () => void): () => void {
    return this.feed.subscribeRange(lo, hi, listener);
  }

  /** {@link subscribeRange} for each of `ranges`, one listener for all; returns the unsubscribe of all. */
  subscribeRanges(ranges: readonly KeyRange[], listener: () => void): () => void {
    const stops = ranges.map((range) => this.subscribeRange(range.lo, range.hi, listener));
    return () => {
      for (const stop of stops) stop();
    };
  }

  /**
   * Resolves when `ready(entry)` holds for the key's live entry (`undefined` when absent), re-checking after every
   * change to the key (in this process or another), and at the entry's expiry. Gives up with `timedOut: true` after
   * `timeoutMs`; rejects when `signal` aborts.
   */
  async waitUntil(
    key: string,
    ready: (entry: Entry | undefined) => boolean,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<WaitResult> {
    const { value, timedOut } = await this.waitFor(
      (wake) => this.feed.subscribeKey(key, wake),
      async () => {
        const entry = await this.get(key);
        const retryInMs = entry?.expiresAt !== undefined ? Math.max(1, entry.expiresAt - this.now() + 1) : undefined;
        return { ready: ready(entry), value: entry, retryInMs };
      },
      options,
    );
    return { entry: value, timedOut };
  }

  /**
   * The loop of every blocking call: subscribe first (so no change between a check and the wait is missed), check,
   * and wait for a wake-up, a retry time or the deadline.
   */
  async waitFor<R>(
    subscribe: (wake: () => void) => () => void,
    attempt: () => Promise<WaitAttempt<R>>,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<{ value: R; timedOut: boolean }> {
    const deadline = Date.now() + options.timeoutMs;
    const closed = this.closing.signal;
    let dirty = false;
    let wake: (() => void) | undefined;
    const unsubscribe = subscribe(() => {
      dirty = true;
      wake?.();
    });
    try {
      for (;;) {
        // a store closed under a wait (a shared handle closed by its owner) ends it, rather than answer from nothing
        if (closed.aborted) throw storeUnavailable(new Error('The store was closed.'), 'read');
        dirty = false;
        const { ready, value, retryInMs } = await attempt();
        if (ready) return { value, timedOut: false };
        if (options.signal?.aborted) throw new Error('The request was cancelled.');
        const remaining = deadline - Date.now();
        if (remaining <= 0) return { value, timedOut: true };
        if (dirty) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.min(remaining, retryInMs ?? Infinity));
          const onAbort = (): void => done();
          options.signal?.addEventListener('abort', onAbort, { once: true });
          closed.addEventListener('abort', onAbort, { once: true });
          function done(): void {
            clearTimeout(timer);
            options.signal?.removeEventListener('abort', onAbort);
            closed.removeEventListener('abort', onAbort);
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

  /**
   * Housekeeping: expired records become tombstones (a logged delete, so followers see them go), tombstones older than
   * the change retention are removed (raising the version floor, so versions still never repeat), and change log
   * entries older than the retention are pruned — in batches of `limit` (each one transaction) until nothing more is
   * due, for at most {@link SWEEP_PASS_MS}, so a store that logs more than a batch between two sweeps does not fall
   * behind. Returns how many records it touched.
   */
  async sweep(limit = 1000): Promise<number> {
    const until = Date.now() + SWEEP_PASS_MS;
    let touched = 0;
    for (;;) {
      const batch = await this.sweepBatch(limit);
      touched += batch.touched;
      if (!batch.more || Date.now() >= until) return touched;
      await new Promise((resolve) => setImmediate(resolve)); // calls go on between batches
    }
  }

  /** One batch of {@link sweep}; `more` when a part of it came full (more may be due). */
  private async sweepBatch(limit: number): Promise<{ touched: number; more: boolean }> {
    const now = this.now();
    const tombstonesBefore = now - this.changeRetentionMs;
    const keys = await this.io('sweep', () => this.backend.due({ now, tombstonesBefore, limit }));
    let touched = 0;
    if (keys.length > 0) {
      ({ result: touched } = await this.transact(async (tx) => {
        let count = 0;
        for (const key of keys) {
          const raw = await tx.raw(key);
          if (raw?.del !== undefined && raw.at <= tombstonesBefore) {
            tx.remove(key);
            await tx.raiseVersionFloor(raw.ver);
            count++;
          } else if (raw?.del === undefined && raw?.exp !== undefined && raw.exp <= tx.now) {
            await tx.expire(key);
            count++;
          }
        }
        return count;
      }));
    }
    const pruned = await this.io('sweep', () => this.backend.pruneChanges(tombstonesBefore, limit));
    // (due keys another process swept meanwhile touch nothing here: no more is due then)
    return { touched, more: (keys.length >= limit && touched > 0) || pruned >= limit };
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.closing.abort();
    await this.backend.close();
  }

  private async io<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      if (this.closing.signal.aborted) throw new Error('The store was closed.'); // on every backend, the memory one too
      return await fn();
    } catch (error) {
      throw error instanceof BlackboardError ? error : storeUnavailable(error, what);
    }
  }
}

function reusedKey(fingerprint: Fingerprint, firstOperation: string | undefined): BlackboardError {
  const first =
    firstOperation !== undefined && firstOperation !== fingerprint.operation
      ? `a {tool:${firstOperation}} call`
      : `{tool:${fingerprint.operation}} with other arguments`;
  return new BlackboardError(
    'INVALID_ARGUMENT',
    `idempotencyKey "${fingerprint.key}" was used for a different call: ${first}. Nothing was written; use a new key per intended write (resend a key only to retry the very same call).`,
    { idempotencyKey: fingerprint.key, path: 'idempotencyKey' },
  );
}
