// `redis://` and `rediss://`: the board in a Redis (or Valkey) with Lua scripting, shared by many processes and machines.
import { compareKeys } from '../keys.js';
import {
  RedisConnection,
  checkServer,
  describeError,
  durabilityWarning,
  parseRedisUrl,
  type RedisOptions,
  type Reply,
} from './client.js';
import { KeyLocks } from './key-locks.js';
import { RedisFollower } from './follower.js';
import { commitArgs, decode, listArgs, readListing, revOf, type Listed } from './records.js';
import { KEY_NAMES, LAYOUT, keysOf } from './scripts.js';
import { newerLayout } from '../layout.js';
import type {
  Backend,
  BackendTx,
  ChangeQuery,
  ChangeRow,
  CommitEvent,
  RangeQuery,
  StoredRecord,
  TxContext,
  Writes,
} from '../types.js';

export { parseRedisUrl, type RedisOptions } from './client.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Attempt<T> = { done: true; result: T; revision: number } | { done: false; read: string[] };

/**
 * A board in Redis. Records are JSON text in one hash; sorted sets index them for code-point-ordered listing, expiry
 * and tombstones; the revision is a counter; the change log is a stream whose ids are revisions. Reads that must
 * agree are one read-only script; a commit is one script that checks what the transaction read (the revision of
 * each record read; each listing, run again) and applies everything or nothing, so transactions are optimistic and
 * re-run only when something they read changed. Other processes' commits are followed with `XREAD BLOCK` on a second connection.
 *
 * Failure behaviour: the offline queue is disabled and every call has a timeout, so a Redis that is down or hangs
 * fails calls within seconds; the client reconnects by itself and calls succeed again when Redis is back.
 */
export class RedisBackend implements Backend {
  readonly shared = true;
  /** set at open when the server's persistence settings cannot give "acknowledged means durable" */
  warning: string | undefined;
  private readonly keys: string[];
  private offset = 0;
  /** the highest revision this process has seen: where following other commits starts */
  private known = 0;
  private readonly listeners = new Set<(event: CommitEvent) => void>();
  private follower?: RedisFollower;
  private readonly locks = new KeyLocks();
  private closed = false;

  private constructor(
    readonly description: string,
    private readonly redis: RedisConnection,
    private readonly options: Required<RedisOptions>,
  ) {
    this.keys = redis.keys;
  }

  /** Connects, checks the server (version, Lua, persistence) and loads the scripts; fails fast when unreachable. */
  static async open(url: string, overrides: RedisOptions = {}): Promise<RedisBackend> {
    const target = parseRedisUrl(url);
    const options: Required<RedisOptions> = {
      callTimeoutMs: 5000,
      conflictTimeoutMs: 20_000,
      maxLogEntries: 100_000,
      ...target.options,
      ...overrides,
    };
    let redis: RedisConnection | undefined;
    try {
      redis = await RedisConnection.connect(target.clientUrl, keysOf(options.prefix), options.callTimeoutMs);
      const backend = new RedisBackend(target.description, redis, options);
      backend.warning = await backend.prepare();
      return backend;
    } catch (error) {
      redis?.destroy();
      throw new Error(describeError(error));
    }
  }

  /** Checks the server and loads the scripts; returns a durability warning, if any. */
  private async prepare(): Promise<string | undefined> {
    await checkServer(this.redis);
    const layoutKey = this.keys[KEY_NAMES.indexOf('layout')];
    await this.redis.call(['SETNX', layoutKey, String(LAYOUT)]);
    const layout = Number(await this.redis.call(['GET', layoutKey]));
    if (layout > LAYOUT) throw newerLayout(layout, LAYOUT);
    await this.redis.loadScripts();
    this.known = (await this.begin([])).revision;
    return durabilityWarning(this.redis, this.description);
  }

  now(): number {
    return Date.now() + this.offset;
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    const raw = (await this.redis.call(['HGET', this.keys[1], key])) as string | null;
    return raw === null ? undefined : decode(key, raw);
  }

  async list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    const { rows, revision } = await this.listRaw(query);
    return { rows, revision };
  }

  async revision(): Promise<number> {
    const revision = Number((await this.redis.call(['GET', this.keys[0]])) ?? 0);
    this.see(revision);
    return revision;
  }

  /**
   * Optimistic: runs `fn` on committed state and commits only if nothing it read changed meanwhile, else runs it
   * again after a short random pause, for up to `conflictTimeoutMs`. Transactions of this process that read the
   * same keys take turns (see {@link KeyLocks}).
   */
  async transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[] = [],
  ): Promise<{ result: T; revision: number }> {
    const deadline = Date.now() + this.options.conflictTimeoutMs;
    const lockKeys = new Set(prefetch);
    let release = lockKeys.size > 0 ? await this.locks.acquire(lockKeys, this.options.callTimeoutMs) : undefined;
    try {
      for (let attempt = 0; ; attempt++) {
        const outcome = await this.attempt(fn, prefetch, Date.now() < deadline);
        if (outcome.done) return { result: outcome.result, revision: outcome.revision };
        if (Date.now() > deadline) {
          throw new Error(`a transaction met conflicting writes ${attempt + 1} times in a row for ${this.options.conflictTimeoutMs} ms and gave up`);
        }
        await sleep(Math.random() * Math.min(100, 2 ** attempt));
        const grown = outcome.read.filter((key) => !lockKeys.has(key));
        if (grown.length > 0) {
          for (const key of grown) lockKeys.add(key);
          release?.();
          release = await this.locks.acquire(lockKeys, this.options.callTimeoutMs);
        }
      }
    } finally {
      release?.();
    }
  }

  /** One run of a transaction: its result, or the keys it read when something it read changed before commit. */
  private async attempt<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[],
    mayRetry: boolean,
  ): Promise<Attempt<T>> {
    const begun = await this.begin(prefetch);
    const cache = new Map<string, string | null>(begun.fetched);
    const reads = new Map<string, number>();
    const lists: Listed[] = [];
    let revision = begun.revision;
    // Reads after the first round trip happen at different moments: unless there is only one read in all, they are
    // checked (by the commit script, against the current state) before the result counts.
    let laterReads = 0;
    let prefetchedReads = 0;
    const tx: BackendTx = {
      get: async (key) => {
        let raw = cache.get(key);
        if (raw !== undefined && begun.fetched.has(key)) prefetchedReads++;
        if (raw === undefined) {
          laterReads++;
          raw = (await this.redis.call(['HGET', this.keys[1], key])) as string | null;
          cache.set(key, raw);
        }
        if (!reads.has(key)) reads.set(key, revOf(raw));
        return raw === null ? undefined : decode(key, raw);
      },
      list: async (query) => {
        laterReads++;
        const listed = await this.listRaw(query);
        lists.push(listed);
        revision = Math.max(revision, listed.revision);
        return listed.rows;
      },
    };
    const needsCheck = (): boolean => laterReads > 1 || (laterReads === 1 && prefetchedReads > 0);
    const conflict = (): Attempt<T> => ({ done: false, read: [...reads.keys()] });
    let outcome: { result: T; writes: Writes };
    try {
      outcome = await fn(tx, { revision: begun.revision, now: begun.now });
    } catch (error) {
      // An error decided from reads that no longer agree with each other is decided again; otherwise it stands.
      if (mayRetry && needsCheck()) {
        const agree = await this.commit(reads, lists, begun.now, new Map()).then((r) => r.ok, () => true);
        if (!agree) return conflict();
      }
      throw error;
    }
    if (outcome.writes.size === 0 && !needsCheck()) return { done: true, result: outcome.result, revision };
    const committed = await this.commit(reads, lists, begun.now, outcome.writes);
    if (committed.ok) return { done: true, result: outcome.result, revision: committed.revision };
    return conflict();
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    const limit = String(query.limit);
    const [expired, tombstones] = (await Promise.all([
      this.redis.call(['ZRANGEBYSCORE', this.keys[3], '-inf', String(query.now), 'LIMIT', '0', limit]),
      this.redis.call(['ZRANGEBYSCORE', this.keys[4], '-inf', String(query.tombstonesBefore), 'LIMIT', '0', limit]),
    ])) as [string[], string[]];
    return [...new Set([...expired, ...tombstones])].slice(0, query.limit);
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    const changes: ChangeRow[] = [];
    /** rows of the revision being read, sorted by key once it is complete (a large commit spans entries) */
    let pending: ChangeRow[] = [];
    const flush = (): boolean => {
      pending.sort((a, b) => compareKeys(a.key, b.key));
      for (const row of pending) {
        if (changes.length >= query.limit) break;
        changes.push(row);
      }
      pending = [];
      return changes.length >= query.limit;
    };
    const batch = Math.min(1000, Math.max(100, query.limit));
    let start = `${query.after + 1}-0`;
    for (;;) {
      // Each call reads the revision and the entries together: once the end of the log is reached, every logged
      // write at or below that revision has been read.
      const [rev, compacted, entries] = (await this.redis.script('CHANGES', [start, String(batch)])) as [string, string, Array<[string, string[]]>];
      const revision = Number(rev);
      this.see(revision);
      for (const [id, fields] of entries) {
        const entryRevision = Number(id.slice(0, id.indexOf('-')));
        if (pending.length > 0 && pending[0].revision !== entryRevision && flush()) {
          return { changes, revision, compacted: Number(compacted) };
        }
        for (let i = 2; i < fields.length; i += 2) {
          const key = fields[i];
          if (compareKeys(key, query.lo) < 0 || compareKeys(key, query.hi) >= 0) continue;
          const value = fields[i + 1];
          pending.push({ revision: entryRevision, key, version: parseInt(value, 10), deleted: value.endsWith('d') });
        }
      }
      if (entries.length < batch) {
        flush();
        return { changes, revision, compacted: Number(compacted) };
      }
      start = `(${entries[entries.length - 1][0]}`;
    }
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    return Number(await this.redis.script('PRUNE', [String(before), String(limit)]));
  }

  /**
   * Follows the change log while anybody listens, from the highest revision this process had seen when the first
   * listener came: every commit after that is delivered (a listener's own reads came later), across reconnects.
   * With no listener there is no follower connection and no timer.
   */
  onForeignCommit(listener: (event: CommitEvent) => void): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1 && !this.closed) {
      this.follower = new RedisFollower(this.redis, this.known, (event) => {
        if ('revision' in event) this.see(event.revision);
        for (const each of [...this.listeners]) {
          try {
            each(event);
          } catch {
            // one listener's failure must not starve the others
          }
        }
      });
    }
    return () => {
      if (!this.listeners.delete(listener)) return;
      if (this.listeners.size === 0) {
        this.follower?.stop();
        this.follower = undefined;
      }
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.follower?.stop();
    this.follower = undefined;
    await this.redis.close();
  }

  private see(revision: number): void {
    if (revision > this.known) this.known = revision;
  }

  /** The first round trip of a transaction: revision, server clock and prefetched records, atomically. */
  private async begin(prefetch: string[]): Promise<{ revision: number; now: number; fetched: Map<string, string | null> }> {
    const sent = Date.now();
    const reply = (await this.redis.script('BEGIN', prefetch)) as Array<string | null>;
    const received = Date.now();
    const revision = Number(reply[0]);
    const server = Number(reply[1]) * 1000 + Math.floor(Number(reply[2]) / 1000);
    this.offset = server - Math.round((sent + received) / 2);
    this.see(revision);
    const fetched = new Map<string, string | null>();
    for (const [i, key] of prefetch.entries()) fetched.set(key, reply[3 + i] ?? null);
    return { revision, now: server, fetched };
  }

  /** A listing, with what a commit needs to check it again: its script arguments, and each row's key and revision. */
  private async listRaw(query: RangeQuery): Promise<Listed> {
    const args = listArgs(query);
    if (!args) return { rows: [], revision: await this.revision(), args: [], seen: [] };
    const listed = readListing((await this.redis.script('LIST', args)) as string[], args);
    this.see(listed.revision);
    return listed;
  }

  /** Runs the commit script: checks the read set, then applies `writes` (none: only checks). */
  private async commit(
    reads: Map<string, number>,
    lists: Listed[],
    now: number,
    writes: Writes,
  ): Promise<{ ok: boolean; revision: number }> {
    const args = commitArgs(reads, lists, now, this.options.maxLogEntries, writes);
    const [ok, revision] = ((await this.redis.script('COMMIT', args)) as Reply[]).map(Number);
    this.see(revision);
    return { ok: ok === 1, revision };
  }
}
