// `redis://` and `rediss://`: the board in a Redis (or Valkey) with Lua scripting, shared by many processes and machines.
import { randomUUID } from 'node:crypto';
import {
  RedisConnection,
  RedisTimeoutError,
  checkServer,
  describeError,
  durabilityWarning,
  parseRedisUrl,
  type RedisOptions,
  type Reply,
} from './client.js';
import { KeyLocks } from './key-locks.js';
import { ErrorReply } from '@redis/client';
import { WriteFateUnknown } from '../../errors.js';
import {
  CALL_BUDGET_MS,
  lookUp,
  MARKER_TTL_MS,
  newMarker,
  notRun,
  RESOLVE_GRACE_MS,
  Unapplied,
  unapplied,
  type FailPoint,
} from './fate.js';
import { RedisCommitListeners } from './follower.js';
import type { Fetched } from './held-records.js';
import { RedisReads } from './reads.js';
import { commitPlan, listArgs, readChanges, type Listed } from './records.js';
import { LAYOUT, epochKeyOf, keysOf, layoutKeyOf, named, turnKeyOf } from './scripts.js';
import { TURN_AFTER_CONFLICTS, Turn } from './turn.js';
import { newerLayout } from '../layout.js';
import type { Backend, BackendTx, ChangeQuery, ChangeRow, CommitEvent, RangeQuery, StoredRecord, TxContext, Writes } from '../types.js';

export { parseRedisUrl, type RedisOptions } from './client.js';

/** How long a call that failed on its connection waits for the reconnect before its one retry. */
const RECONNECT_WAIT_MS = 1500;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
type Attempt<T> = { done: true; result: T; revision: number } | { done: false; read: string[] };

/**
 * A board in Redis (the layout is in scripts.ts). Reads that must agree are one read-only script; a commit is one
 * script that checks what the transaction read and applies everything or nothing, so transactions are optimistic and
 * re-run only when something they read changed; other processes' commits are followed with `XREAD BLOCK`. Every
 * call has a timeout and no offline queue: a Redis that is down fails calls within seconds, and the client reconnects.
 */
export class RedisBackend implements Backend {
  readonly shared = true;
  /** set at open when the server's persistence settings cannot give "acknowledged means durable" */
  warning: string | undefined;
  private readonly keys: ReturnType<typeof named>;
  private offset = 0;
  /** the highest revision this process has seen: where following other commits starts */
  private known = 0;
  private readonly commits: RedisCommitListeners;
  private readonly locks = new KeyLocks();
  /** the reading scripts (large records this process holds come back as their revision, not their text) */
  private readonly reads: RedisReads;
  private readonly epochKey: string;
  /** called at each moment of a write where the connection may break (tests break it there) */
  failPoint?: (point: FailPoint) => void | Promise<void>;

  private constructor(
    readonly description: string,
    private readonly redis: RedisConnection,
    private readonly options: Required<RedisOptions>,
  ) {
    this.keys = named(redis.keys);
    this.epochKey = epochKeyOf(options.prefix);
    this.reads = new RedisReads(redis, this.epochKey);
    this.commits = new RedisCommitListeners(
      redis,
      () => this.known,
      (revision) => this.see(revision),
    );
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
      callBudgetMs: 0,
    };
    options.callBudgetMs = overrides.callBudgetMs ?? Math.max(CALL_BUDGET_MS, options.callTimeoutMs);
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
    const layoutKey = layoutKeyOf(this.options.prefix);
    await this.redis.call(['SETNX', layoutKey, String(LAYOUT)]);
    const layout = Number(await this.redis.call(['GET', layoutKey]));
    if (layout > LAYOUT) throw newerLayout(layout, LAYOUT);
    await this.redis.call(['SET', this.epochKey, randomUUID(), 'NX']);
    await this.redis.loadScripts();
    this.known = (await this.begin([])).revision;
    return durabilityWarning(this.redis, this.description);
  }

  now(): number {
    return Date.now() + this.offset;
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    return (await this.read(() => this.reads.records([key])))[0].get();
  }

  async list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    const { rows, revision } = await this.read(() => this.listRaw(query));
    return { rows, revision };
  }

  async revision(): Promise<number> {
    const revision = Number((await this.read(() => this.redis.call(['GET', this.keys.rev]))) ?? 0);
    this.see(revision);
    return revision;
  }

  /**
   * Optimistic: commits only if nothing `fn` read changed, else runs it again; local readers of a key take turns, and
   * one that keeps losing to other processes takes the board's turn (turn.ts).
   */
  async transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[] = [],
  ): Promise<{ result: T; revision: number }> {
    const deadline = Date.now() + this.options.conflictTimeoutMs;
    const callDeadline = Date.now() + this.options.callBudgetMs;
    let retried = false;
    const lockKeys = new Set(prefetch);
    let release = lockKeys.size > 0 ? await this.locks.acquire(lockKeys, this.options.callTimeoutMs) : undefined;
    const turn = new Turn(this.redis, turnKeyOf(this.options.prefix), deadline);
    try {
      for (let attempt = 0; ; attempt++) {
        if (attempt >= TURN_AFTER_CONFLICTS) await turn.take();
        let outcome: Attempt<T>;
        try {
          outcome = await this.attempt(fn, prefetch, callDeadline, turn.token);
        } catch (error) {
          if (!(error instanceof Unapplied)) throw error;
          // Nothing was changed: once more when connected again (a reset costs the caller nothing), unless the store
          // did not answer at all (a partition: another try would only wait as long again).
          if (retried || error.reason instanceof RedisTimeoutError || !(await this.reconnected(callDeadline))) throw error.reason;
          retried = true;
          continue;
        }
        if (outcome.done) return { result: outcome.result, revision: outcome.revision };
        if (Date.now() > deadline) {
          throw new Error(
            `a transaction met conflicting writes ${attempt + 1} times in a row for ${this.options.conflictTimeoutMs} ms and gave up`,
          );
        }
        await sleep(Math.random() * Math.min(100, 2 ** attempt));
        const grown = outcome.read.filter((key) => !lockKeys.has(key));
        if (grown.length > 0) {
          await turn.release(); // not held while waiting for this process's locks (their holders may wait for it)
          for (const key of grown) lockKeys.add(key);
          release?.();
          release = await this.locks.acquire(lockKeys, this.options.callTimeoutMs);
        }
      }
    } finally {
      release?.();
      await turn.release();
    }
  }

  /** One run: its result, or the keys it read when one changed before commit (a failure that changed nothing: `Unapplied`). */
  private async attempt<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[],
    callDeadline: number,
    turn: string,
  ): Promise<Attempt<T>> {
    const begun = await unapplied(
      Promise.resolve()
        .then(() => this.failPoint?.('begin'))
        .then(() => this.begin(prefetch)),
    );
    const cache = new Map<string, Fetched>(begun.fetched);
    const reads = new Map<string, number>();
    const lists: Listed[] = [];
    let revision = begun.revision;
    // Reads after the first round trip happen at different moments: unless there is only one read in all, they are
    // checked (by the commit script, against the current state) before the result counts.
    let laterReads = 0;
    let prefetchedReads = 0;
    const tx: BackendTx = {
      get: async (key) => {
        if (begun.fetched.has(key)) prefetchedReads++;
        else if (!cache.has(key)) await tx.prefetch!([key]);
        const fetched = cache.get(key)!;
        if (!reads.has(key)) reads.set(key, fetched.rev);
        return fetched.get();
      },
      prefetch: async (keys) => {
        const more = keys.filter((key) => !cache.has(key)); // a key is read once: its first value is the one checked
        laterReads++;
        const found = more.length > 0 ? await unapplied(this.reads.records(more)) : [];
        for (const [i, key] of more.entries()) cache.set(key, found[i]);
      },
      list: async (query) => {
        laterReads++;
        const listed = await unapplied(this.listRaw(query));
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
      // An error decided from reads that no longer agree with each other is decided again (past the conflict deadline,
      // the caller is told the transaction gave up); otherwise it stands. A check that fails changed nothing
      // (`Unapplied`): the transaction runs again once connected, or fails as the store being unavailable.
      if (needsCheck() && !(await this.commit(reads, lists, begun.now, new Map())).ok) return conflict();
      throw error;
    }
    if (outcome.writes.size === 0 && !needsCheck()) return { done: true, result: outcome.result, revision };
    const committed = await this.commit(reads, lists, begun.now, outcome.writes, callDeadline, turn);
    if (committed.ok) return { done: true, result: outcome.result, revision: committed.revision };
    return conflict();
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    const limit = String(query.limit);
    const [expired, tombstones] = (await Promise.all([
      this.redis.call(['ZRANGEBYSCORE', this.keys.exp, '-inf', String(query.now), 'LIMIT', '0', limit]),
      this.redis.call(['ZRANGEBYSCORE', this.keys.tomb, '-inf', String(query.tombstonesBefore), 'LIMIT', '0', limit]),
    ])) as [string[], string[]];
    return [...new Set([...expired, ...tombstones])].slice(0, query.limit);
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    return this.read(() => readChanges(this.redis, query, (revision) => this.see(revision)));
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    return Number(await this.redis.script('PRUNE', [String(before), String(limit)]));
  }

  /** Follows the change log while anybody listens, from the highest revision seen, across reconnects (see follower.ts). */
  onForeignCommit(listener: (event: CommitEvent) => void): () => void {
    return this.commits.subscribe(listener);
  }

  async close(): Promise<void> {
    this.commits.close();
    await this.redis.close();
  }

  /** A read, once more when its connection failed (reset, reconnecting): a read changes nothing, so a retry is safe. */
  private async read<T>(run: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.options.callBudgetMs;
    try {
      return await run();
    } catch (error) {
      if (error instanceof ErrorReply || error instanceof RedisTimeoutError || !(await this.reconnected(deadline))) throw error;
      return run();
    }
  }

  /** Whether the connection is back soon (a reset reconnects within milliseconds; a Redis that is down does not) with time left. */
  private async reconnected(deadline: number): Promise<boolean> {
    return Date.now() < deadline - 200 && this.redis.ready(Math.min(deadline, Date.now() + RECONNECT_WAIT_MS));
  }

  private see(revision: number): void {
    this.known = Math.max(this.known, revision);
  }

  /** The first round trip of a transaction: revision, server clock and prefetched records, atomically. */
  private async begin(prefetch: string[]): Promise<{ revision: number; now: number; fetched: Map<string, Fetched> }> {
    const sent = Date.now();
    const { revision, server, fetched } = await this.reads.begin(prefetch);
    this.offset = server - Math.round((sent + Date.now()) / 2);
    this.see(revision);
    return { revision, now: server, fetched };
  }

  /** A listing, with what a commit needs to check it again: its script arguments, and each row's key and revision. */
  private async listRaw(query: RangeQuery): Promise<Listed> {
    const args = listArgs(query);
    if (!args) return { rows: [], revision: await this.revision(), args: [], seen: [] };
    const listed = await this.reads.list(query, args);
    this.see(listed.revision);
    return listed;
  }

  /** The commit script; a write's marker is looked up ({@link lookUp}) when its reply is lost (see fate.ts). */
  private async commit(
    reads: Map<string, number>,
    lists: Listed[],
    now: number,
    writes: Writes,
    deadline = Date.now() + this.options.callBudgetMs,
    turn = '',
  ): Promise<{ ok: boolean; revision: number }> {
    const marker = writes.size > 0 ? newMarker(this.options.prefix) : undefined;
    const plan = commitPlan(reads, lists, now, this.options.maxLogEntries, writes, MARKER_TTL_MS, turn);
    let reply: number[];
    try {
      await this.failPoint?.(marker ? 'commit' : 'check'); // 'check': a commit of no writes, checking reads
      const keys = marker ? [marker, turnKeyOf(this.options.prefix)] : [];
      reply = ((await this.redis.script('COMMIT', plan.args, keys)) as Reply[]).map(Number);
      if (marker) await this.failPoint?.('committed');
    } catch (error) {
      if (!marker || notRun(error)) throw new Unapplied(error);
      const fate = await lookUp(this.redis, marker, deadline + RESOLVE_GRACE_MS, this.failPoint);
      if (fate === 'unknown') throw new WriteFateUnknown(error);
      if (fate === 'fenced') throw new Unapplied(error);
      reply = [1, fate];
    }
    const [ok, revision] = reply;
    this.see(revision);
    if (ok === 2) throw new Unapplied(new Error('the commit was fenced by a lookup of its fate'));
    if (ok === 1 && marker) this.reads.committed(plan.written(revision));
    return { ok: ok === 1, revision };
  }
}
