// The Postgres backend (`postgres://`, `postgresql://`): many machines share one store through `pg`.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { VERSION_FLOOR_KEY } from '../keys.js';
import { WriteFateUnknown } from '../../errors.js';
import { Connections } from './connections.js';
import { describeError, isDriverError, loggedOf, RESOLVE_GRACE_MS, resolveFate, type FailPoint, type SentWrite } from './fate.js';
export { describeError } from './fate.js';
import { CommitListener, doorbellStatement } from './listener.js';
import { KnownRecords } from '../known-records.js';
import { RECORD_PREFIX } from '../codec.js';
import { listRecords, readRecord } from './record-reads.js';
import { beginStatement, txReads } from './tx-reads.js';
import { checkDatabase, isReset, parsePostgresUrl, tablesGone, tablesOf, type Tables } from './schema.js';
import { writeStatement } from './sql.js';
import { pruneChangeLog, readChanges, readLog } from './change-log.js';
import type {
  Backend,
  BackendTx,
  ChangeQuery,
  ChangeRow,
  CommitEvent,
  KeyRange,
  RangeQuery,
  StoredRecord,
  TxContext,
  Writes,
} from '../types.js';

/** Tuning for tests; users set connection options in the URL. */
export interface PostgresOptions {
  /** how often the commit listener's safety poll reads the change log while somebody listens (default 2000 ms) */
  safetyPollMs?: number;
  /** how long a call may try before it answers (default 11000 ms, or the statement timeout if longer) */
  callBudgetMs?: number;
  /** called at each moment of a write where the connection may break (tests break it there) */
  failPoint?: (point: FailPoint, client: pg.ClientBase) => void | Promise<void>;
}

/** A commit writing this many records or more asks for fresh planner statistics (see `analyzeSoon`). */
const BULK_WRITES = 1000;
/** The database clock in epoch milliseconds, read when the statement runs (not when its transaction began). */
const NOW_MS = `floor(extract(epoch FROM clock_timestamp()) * 1000)::float8`;

/**
 * Records live in `records (key text COLLATE "C", record text)`, the JSON text exactly as written; the change log in
 * `changes`; the revision and the highest pruned revision in the single `meta` row.
 *
 * Every transaction begins by locking the `meta` row (`SELECT … FOR UPDATE`), which serialises writers across all
 * processes and machines; it is correct at READ COMMITTED because every later statement takes a fresh snapshot,
 * taken after the lock was granted. The lock, the database clock and the prefetched keys and ranges travel in one
 * round trip; the writes, the revision bump, the change log entries, COMMIT and then a `pg_notify` doorbell in its own
 * transaction (never inside the writing one), which tells other processes which keys changed, in another (COMMIT and
 * the doorbell apart when large records go as parameters).
 */
export class PostgresBackend implements Backend {
  readonly shared = true;
  readonly description: string;
  /** server clock minus local clock, ms, measured on every transaction */
  private offset = 0;
  private readonly instance = randomUUID();
  private readonly listener: CommitListener;
  private readonly bells = new Set<Promise<void>>();
  private closed = false;
  /** large committed records this process holds, parsed (see `KnownRecords`) */
  private readonly known = new KnownRecords(RECORD_PREFIX);
  /** the tables' identity when `known` was filled (tables made anew start revisions over) */
  private tablesOid?: string;
  private lastAnalyze = 0;

  private readonly failPoint: PostgresOptions['failPoint'];

  private constructor(
    private readonly db: Connections,
    private readonly t: Tables,
    description: string,
    options: PostgresOptions,
  ) {
    this.description = description;
    this.failPoint = options.failPoint;
    this.listener = new CommitListener({
      config: db.listenConfig,
      channel: t.channel,
      instance: this.instance,
      pollMs: options.safetyPollMs ?? 2000,
      readLog: (client, after, limit) => readLog(client, this.t, after, limit),
    });
  }

  /** Connects, checks the schema and the clock (once more after a reset); an unreachable server fails with its cause. */
  static async open(url: string, options: PostgresOptions = {}): Promise<PostgresBackend> {
    const parsed = parsePostgresUrl(url);
    const db = new Connections(parsed, options.callBudgetMs);
    const backend = new PostgresBackend(db, tablesOf(parsed.schema), parsed.masked, options);
    for (let attempt = 0; ; attempt++) {
      try {
        await backend.prepare();
        return backend;
      } catch (error) {
        if (attempt === 0 && isReset(error)) continue;
        await db.end();
        throw new Error(describeError(error));
      }
    }
  }

  /** Checks the database (encoding, schema) and reads the clock, on one connection (destroyed when it broke). */
  private async prepare(): Promise<void> {
    const client = await this.db.pool.connect();
    let broken: Error | undefined;
    try {
      await checkDatabase(client, this.t, this.db.listenConfig === this.db.config ? undefined : this.db.listenConfig);
      await this.clock(client);
    } catch (error) {
      broken = error as Error;
      throw error;
    } finally {
      client.release(broken !== undefined && isReset(broken) ? broken : undefined);
    }
  }

  now(): number {
    return Date.now() + this.offset;
  }

  /** The tables were read as `oid`: tables made anew (revisions starting over) make every held record forgotten. */
  private adoptTables(oid: string): void {
    if (oid !== this.tablesOid) {
      this.known.clear();
      this.tablesOid = oid;
    }
  }

  get(key: string): Promise<StoredRecord | undefined> {
    return readRecord(this.db, this.t, this.known, this.tablesOid, key);
  }

  list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    // One snapshot: the rows and the revision they were read at (large rows this process holds stay in the database).
    return listRecords(this.db, this.t, this.known, (oid) => this.adoptTables(oid), query);
  }

  async revision(): Promise<number> {
    const { rows } = await this.db.readPrepared<{ revision: string }>(`SELECT revision FROM ${this.t.meta} WHERE id = 1`, []);
    if (rows.length === 0) throw tablesGone(this.t);
    return Number(rows[0].revision);
  }

  /**
   * One transaction. A failure before COMMIT was sent changed nothing: it runs once more on a fresh connection. After,
   * its fate is looked up by transaction id ({@link resolveFate}); only one still unknown is `WriteFateUnknown`.
   */
  async transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[] = [],
    ranges: KeyRange[] = [],
  ): Promise<{ result: T; revision: number }> {
    const deadline = this.db.deadline();
    // The version floor is read by every transaction that creates a key: fetching it up front saves a round trip.
    const keys = [...new Set([...prefetch, VERSION_FLOOR_KEY])];
    const done = await this.db.turn(deadline);
    try {
      for (let attempt = 0; ; attempt++) {
        const outcome = await this.attempt(fn, keys, ranges, deadline, attempt > 0);
        if ('value' in outcome) return outcome.value;
        if (attempt > 0 || Date.now() > deadline - 200) throw outcome.unchanged;
      }
    } finally {
      done();
    }
  }

  /** One run of a transaction: its result, or the error of a failure that changed nothing (the caller may retry). */
  private async attempt<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    keys: string[],
    ranges: KeyRange[],
    deadline: number,
    fresh: boolean,
  ): Promise<{ value: { result: T; revision: number } } | { unchanged: unknown }> {
    const lent = await this.db.lend(fresh, deadline).catch((error: unknown) => ({ failed: error }));
    if ('failed' in lent) return { unchanged: lent.failed };
    const { client, done } = lent;
    const q = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => this.db.query<R>(client, deadline, text, values);
    let sent: (SentWrite & { keys: string[]; result: T }) | undefined;
    try {
      await this.failPoint?.('begin', client);
      const began = Date.now();
      const results = (await q(beginStatement(this.t, keys, ranges, NOW_MS, this.db.txTimeouts))) as unknown as pg.QueryResult[];
      const [lock, clock] = [results[2], results[3]];
      if (lock.rows.length === 0) throw tablesGone(this.t);
      const revision = Number(lock.rows[0].revision);
      // Tables made anew (the schema dropped and created again) start their revisions over: nothing known holds.
      const oid = String(lock.rows[0].oid);
      this.adoptTables(oid);
      const now = Number(clock.rows[0].now);
      const { xid, started, pid } = clock.rows[0] as { xid: string; started: string; pid: number };
      // The clock was read mid-way through a quick round trip; one that waited for the lock says less (kept as is).
      const received = Date.now();
      if (received - began < 50) this.offset = now - Math.round((began + received) / 2);
      const tx = await txReads(this.t, q, this.known, keys, ranges, results.slice(4));
      const { result, writes } = await fn(tx, { revision, now });
      if (writes.size === 0) {
        await q('COMMIT');
        done();
        return { value: { result, revision } };
      }
      const next = revision + 1;
      const { sql, params, written } = writeStatement(this.t, writes, next, now);
      // Until the commit is known to have happened, nothing this transaction writes may be taken as known.
      for (const key of writes.keys()) this.known.forget(key);
      // From here on the store may change: a failure is looked up, never retried blindly.
      sent = { next, xid, pid, started, now, logged: loggedOf(writes), changes: this.t.changes, keys: [...writes.keys()], result };
      await this.failPoint?.('commit', client);
      // With its COMMIT and the doorbell's own transaction in one round trip, so that other processes hear of the
      // commit as it happens; one carrying large records as parameters goes alone, then COMMIT, then the doorbell.
      const bell = params.length === 0 ? doorbellStatement(this.t.channel, { r: next, k: sent.keys, i: this.instance }) : undefined;
      if (bell !== undefined) await q(`${sql}; COMMIT; ${bell}`);
      else {
        await q(sql, params);
        await this.failPoint?.('written', client);
        await q('COMMIT');
      }
      // Unless another transaction of this process found the tables made anew meanwhile.
      if (oid === this.tablesOid) this.known.committed(written);
      await this.failPoint?.('committed', client);
      if (bell === undefined) this.ring(sent.next, sent.keys, client, done);
      else {
        this.listener.ownCommit(next);
        done();
      }
      if (writes.size >= BULK_WRITES) this.analyzeSoon();
      return { value: { result, revision: next } };
    } catch (error) {
      if (!sent) {
        if (isDriverError(error)) {
          done(error as Error); // a broken or timed-out connection is discarded, never reused
          return { unchanged: error };
        }
        // An SQL error or the transaction function's own: the connection is fine, end the transaction.
        await client.query('ROLLBACK').then(
          () => done(),
          (rollbackError: Error) => done(rollbackError),
        );
        throw error;
      }
      done(error as Error);
      const fate = await resolveFate(this.db.config, sent, deadline + RESOLVE_GRACE_MS, (point) => this.failPoint?.(point, client));
      if (fate === 'committed') {
        this.ring(sent.next, sent.keys);
        return { value: { result: sent.result, revision: sent.next } };
      }
      if (fate === 'aborted') {
        if (isDriverError(error)) return { unchanged: error };
        throw error;
      }
      throw new WriteFateUnknown(error);
    }
  }

  /**
   * After a bulk write Postgres's statistics lag until autoanalyze runs, and the planner lists a grown table by
   * scanning it (30 ms instead of 0.1 ms at 100,000 keys): a big commit asks for an ANALYZE, at most once a minute.
   */
  private analyzeSoon(): void {
    const now = Date.now();
    if (this.closed || now - this.lastAnalyze < 60_000) return;
    this.lastAnalyze = now;
    const ignore = (): void => {};
    const done = this.db.pool
      .query(`ANALYZE ${this.t.records}`)
      .then(ignore, ignore)
      .finally(() => this.bells.delete(done));
    this.bells.add(done);
  }

  /**
   * After a commit that could not carry its doorbell (its records went as parameters, or its reply was lost), rings
   * the doorbell for the other processes on the same connection, then gives it back; a doorbell lost in a crash is
   * found by the listeners' safety poll.
   */
  private ring(revision: number, keys: string[], client?: pg.ClientBase, done?: (error?: Error) => void): void {
    this.listener.ownCommit(revision);
    const text = doorbellStatement(this.t.channel, { r: revision, k: keys, i: this.instance });
    // A doorbell that fails (the connection broke after the commit) changes nothing about the write, which stands:
    // the listeners' safety poll finds the commit instead.
    const rung = client ? Promise.resolve(this.failPoint?.('doorbell', client)).then(() => client.query(text)) : this.db.pool.query(text);
    const done_ = rung
      .then(
        () => done?.(),
        (error: Error) => done?.(error),
      )
      .finally(() => this.bells.delete(done_));
    this.bells.add(done_);
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    const { rows } = await this.db.read<{ key: string }>(
      `SELECT key FROM (
         (SELECT key FROM ${this.t.records} WHERE exp <= $1 ORDER BY exp LIMIT $3)
         UNION
         (SELECT key FROM ${this.t.records} WHERE tomb_at <= $2 ORDER BY tomb_at LIMIT $3)
       ) d ORDER BY key LIMIT $3`,
      [query.now, query.tombstonesBefore, query.limit],
    );
    return rows.map((row) => row.key);
  }

  changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    return readChanges(this.db, this.t, query);
  }

  pruneChanges(before: number, limit: number): Promise<number> {
    return pruneChangeLog(this.db, this.t, before, limit);
  }

  onForeignCommit(listener: (event: CommitEvent) => void): () => void {
    if (this.closed) return () => {};
    return this.listener.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.bells]);
    await this.listener.close();
    await this.db.end();
  }

  private async clock(client: pg.ClientBase): Promise<void> {
    const sent = Date.now();
    const { rows } = await client.query<{ now: number }>(`SELECT ${NOW_MS} AS now`);
    this.offset = Number(rows[0].now) - Math.round((sent + Date.now()) / 2);
  }
}
