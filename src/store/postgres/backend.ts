// The Postgres backend (`postgres://`, `postgresql://`): many machines share one store through `pg`.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { VERSION_FLOOR_KEY } from '../keys.js';
import { CommitListener, type Doorbell, type LogTail } from './listener.js';
import { ensureSchema, parsePostgresUrl, tablesOf, type Tables } from './schema.js';
import { array, decode, decodeRows, lit, rangeWhere, writeStatement } from './sql.js';
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

/** Tuning for tests; users set connection options in the URL. */
export interface PostgresOptions {
  /** how often the commit listener's safety poll reads the change log while somebody listens (default 2000 ms) */
  safetyPollMs?: number;
}

/** The database clock in epoch milliseconds, read when the statement runs (not when its transaction began). */
/** A commit writing this many records or more asks for fresh planner statistics (see `analyzeSoon`). */
const BULK_WRITES = 1000;
const NOW_MS = `floor(extract(epoch FROM clock_timestamp()) * 1000)::float8`;
/** A doorbell must fit a NOTIFY payload (8000 bytes); larger commits ring without their keys. */
const DOORBELL_BYTES = 7000;

/**
 * Records live in `records (key text COLLATE "C", record text)`, the JSON text exactly as written; the change log in
 * `changes`; the revision and the highest pruned revision in the single `meta` row.
 *
 * Every transaction begins by locking the `meta` row (`SELECT … FOR UPDATE`), which serialises writers across all
 * processes and machines; it is correct at READ COMMITTED because every later statement takes a fresh snapshot,
 * taken after the lock was granted. The lock, the database clock and the prefetched keys travel in one round trip;
 * the writes, the revision bump, the change log entries and COMMIT in another. After the commit, a `pg_notify`
 * doorbell (never inside the writing transaction) tells other processes which keys changed.
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
  private lastAnalyze = 0;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly t: Tables,
    description: string,
    listenerConfig: pg.ClientConfig,
    pollMs: number,
  ) {
    this.description = description;
    this.listener = new CommitListener({
      config: listenerConfig,
      channel: t.channel,
      instance: this.instance,
      pollMs,
      readLog: (client, after, limit) => this.readLog(client, after, limit),
    });
  }

  /** Connects, creates the schema if needed and measures the clock; an unreachable server fails with its cause. */
  static async open(url: string, options: PostgresOptions = {}): Promise<PostgresBackend> {
    const parsed = parsePostgresUrl(url);
    const config: pg.ClientConfig = {
      connectionString: parsed.connectionString,
      connectionTimeoutMillis: parsed.connectTimeoutMs,
      statement_timeout: parsed.statementTimeoutMs,
      // A host that freezes mid-transaction must not hold the store's lock for long.
      idle_in_transaction_session_timeout: parsed.statementTimeoutMs + 5000,
      // The client gives up a little after the server would, also when the server is unreachable mid-query.
      query_timeout: parsed.statementTimeoutMs + 2000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'mcp-blackboard',
    };
    const pool = new pg.Pool({ ...config, max: parsed.poolMax, idleTimeoutMillis: 30_000 });
    // A connection that breaks is dropped (idle: by the pool; checked out: on release, as its call fails) and the next
    // call reconnects. Its 'error' event must never go unheard: that would end the process.
    pool.on('error', () => {});
    pool.on('connect', (client) => client.on('error', () => {}));
    const backend = new PostgresBackend(pool, tablesOf(parsed.schema), parsed.masked, config, options.safetyPollMs ?? 2000);
    try {
      const client = await pool.connect();
      try {
        const { rows } = await client.query<{ server_encoding: string }>('SHOW server_encoding');
        const encoding = rows[0]?.server_encoding;
        if (encoding !== 'UTF8' && encoding !== 'SQL_ASCII') {
          throw new Error(`the database's encoding is ${encoding}; keys and values need UTF8 (CREATE DATABASE … ENCODING 'UTF8')`);
        }
        await ensureSchema(client, backend.t);
        await backend.clock(client);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => {});
      throw new Error(describeError(error));
    }
    return backend;
  }

  now(): number {
    return Date.now() + this.offset;
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    const { rows } = await this.pool.query<{ record: string }>(`SELECT record FROM ${this.t.records} WHERE key = $1`, [key]);
    return rows.length > 0 ? decode(key, rows[0].record) : undefined;
  }

  async list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    // One statement, one snapshot: the rows and the revision they were read at.
    const [where, params] = rangeWhere(query, 2);
    const { rows } = await this.pool.query<{ revision: string; key: string | null; record: string | null }>(
      `SELECT m.revision, r.key, r.record FROM ${this.t.meta} m
         LEFT JOIN LATERAL (SELECT key, record FROM ${this.t.records} WHERE ${where} ORDER BY key LIMIT $1) r ON true
        WHERE m.id = 1 ORDER BY r.key`,
      [query.limit, ...params],
    );
    if (rows.length === 0) throw tablesGone(this.t);
    return { rows: decodeRows(rows), revision: Number(rows[0].revision) };
  }

  async revision(): Promise<number> {
    const { rows } = await this.pool.query<{ revision: string }>(`SELECT revision FROM ${this.t.meta} WHERE id = 1`);
    if (rows.length === 0) throw tablesGone(this.t);
    return Number(rows[0].revision);
  }

  async transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[] = [],
  ): Promise<{ result: T; revision: number }> {
    const client = await this.pool.connect();
    let release = true;
    try {
      // The version floor is read by every transaction that creates a key: fetching it up front saves a round trip.
      const keys = [...new Set([...prefetch, VERSION_FLOOR_KEY])];
      // One round trip: BEGIN, the store's lock, then (with a snapshot taken after the lock was granted) the clock
      // and the prefetched keys.
      const sent = Date.now();
      const results = (await client.query(
        `BEGIN ISOLATION LEVEL READ COMMITTED;
         SELECT revision FROM ${this.t.meta} WHERE id = 1 FOR UPDATE;
         SELECT ${NOW_MS} AS now;
         SELECT key, record FROM ${this.t.records} WHERE key = ANY(${array(keys.map(lit), 'text')})`,
      )) as unknown as pg.QueryResult[];
      if (results[1].rows.length === 0) throw tablesGone(this.t);
      const revision = Number(results[1].rows[0].revision);
      const now = Number(results[2].rows[0].now);
      // The clock was read mid-way through a quick round trip; one that waited for the lock says less (kept as is).
      const received = Date.now();
      if (received - sent < 50) this.offset = now - Math.round((sent + received) / 2);
      const fetched = new Map<string, string>(results[3].rows.map((row) => [String(row.key), String(row.record)]));
      const prefetched = new Set(keys);
      const tx: BackendTx = {
        get: async (key) => {
          if (prefetched.has(key)) {
            const raw = fetched.get(key);
            return raw === undefined ? undefined : decode(key, raw);
          }
          const { rows } = await client.query<{ record: string }>(`SELECT record FROM ${this.t.records} WHERE key = $1`, [key]);
          return rows.length > 0 ? decode(key, rows[0].record) : undefined;
        },
        list: async (query) => {
          const [where, params] = rangeWhere(query, 2);
          const { rows } = await client.query<{ key: string; record: string }>(
            `SELECT key, record FROM ${this.t.records} WHERE ${where} ORDER BY key LIMIT $1`,
            [query.limit, ...params],
          );
          return decodeRows(rows);
        },
      };
      const { result, writes } = await fn(tx, { revision, now });
      if (writes.size === 0) {
        await client.query('COMMIT');
        return { result, revision };
      }
      const next = revision + 1;
      await client.query(`${writeStatement(this.t, writes, next, now)}; COMMIT`);
      this.listener.ownCommit(next);
      this.ring(client, next, [...writes.keys()]);
      release = false; // the doorbell releases the connection when it has rung
      if (writes.size >= BULK_WRITES) this.analyzeSoon();
      return { result, revision: next };
    } catch (error) {
      if (error instanceof pg.DatabaseError || !isDriverError(error)) {
        // An SQL error or the transaction function's own: the connection is fine, end the transaction.
        await client.query('ROLLBACK').then(
          () => client.release(),
          (rollbackError: Error) => client.release(rollbackError),
        );
      } else {
        client.release(error as Error); // a broken or timed-out connection is discarded, never reused
      }
      release = false;
      throw error;
    } finally {
      if (release) client.release();
    }
  }

  /**
   * Rings the doorbell after the commit, on the same connection, then gives the connection back. Its own small
   * transaction commits asynchronously: a doorbell lost in a crash is found by the listeners' safety poll.
   */
  /**
   * After a bulk write (an import, a restore, a burst of keys), Postgres's statistics lag until its autoanalyze runs,
   * up to a minute later; meanwhile the planner takes a grown table for a tiny one and lists by scanning and sorting
   * it (30 ms instead of 0.1 ms at 100,000 keys). So a big commit asks for an ANALYZE of the records, at most once
   * a minute, off the caller's path.
   */
  private analyzeSoon(): void {
    const now = Date.now();
    if (this.closed || now - this.lastAnalyze < 60_000) return;
    this.lastAnalyze = now;
    const done = this.pool
      .query(`ANALYZE ${this.t.records}`)
      .then(
        () => {},
        () => {},
      )
      .finally(() => this.bells.delete(done));
    this.bells.add(done);
  }

  private ring(client: pg.PoolClient, revision: number, keys: string[]): void {
    let bell: Doorbell = { r: revision, k: keys, i: this.instance };
    if (Buffer.byteLength(JSON.stringify(bell)) > DOORBELL_BYTES) bell = { r: revision, i: this.instance };
    const done = client
      .query(`BEGIN; SET LOCAL synchronous_commit = off; SELECT pg_notify(${lit(this.t.channel)}, ${lit(JSON.stringify(bell))}); COMMIT`)
      .then(
        () => client.release(),
        (error: Error) => client.release(error),
      )
      .finally(() => this.bells.delete(done));
    this.bells.add(done);
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    const { rows } = await this.pool.query<{ key: string }>(
      `SELECT key FROM (
         (SELECT key FROM ${this.t.records} WHERE exp <= $1 ORDER BY exp LIMIT $3)
         UNION
         (SELECT key FROM ${this.t.records} WHERE tomb_at <= $2 ORDER BY tomb_at LIMIT $3)
       ) d ORDER BY key LIMIT $3`,
      [query.now, query.tombstonesBefore, query.limit],
    );
    return rows.map((row) => row.key);
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    // One statement, one snapshot: entries up to the revision it reports, never a later commit's half.
    const { rows } = await this.pool.query<{
      current: string;
      compacted: string;
      revision: string | null;
      key: string | null;
      version: string | null;
      deleted: boolean | null;
    }>(
      `SELECT m.revision AS current, m.compacted, c.revision, c.key, c.version, c.deleted FROM ${this.t.meta} m
         LEFT JOIN LATERAL (SELECT revision, key, version, deleted FROM ${this.t.changes}
                             WHERE revision > $1 AND key >= $2 AND key < $3
                             ORDER BY revision, key LIMIT $4) c ON true
        WHERE m.id = 1 ORDER BY c.revision, c.key`,
      [query.after, query.lo, query.hi, query.limit],
    );
    if (rows.length === 0) throw tablesGone(this.t);
    const changes: ChangeRow[] = [];
    for (const row of rows) {
      if (row.revision === null) continue;
      changes.push({ revision: Number(row.revision), key: row.key!, version: Number(row.version), deleted: row.deleted === true });
    }
    return { changes, revision: Number(rows[0].current), compacted: Number(rows[0].compacted) };
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    const { rows } = await this.pool.query<{ count: string }>(
      `WITH gone AS (
         DELETE FROM ${this.t.changes} WHERE ctid IN (SELECT ctid FROM ${this.t.changes} WHERE at <= $1 ORDER BY at LIMIT $2)
         RETURNING revision),
       mark AS (
         UPDATE ${this.t.meta} SET compacted = GREATEST(compacted, (SELECT max(revision) FROM gone))
          WHERE id = 1 AND EXISTS (SELECT 1 FROM gone))
       SELECT count(*) AS count FROM gone`,
      [before, limit],
    );
    return Number(rows[0].count);
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
    await this.pool.end().catch(() => {});
  }

  /** The change log after `after` with the revision and `compacted` of the same snapshot (for the listener). */
  private async readLog(client: pg.ClientBase, after: number, limit: number): Promise<LogTail> {
    const { rows } = await client.query<{ current: string; compacted: string; revision: string | null; key: string | null }>(
      `SELECT m.revision AS current, m.compacted, c.revision, c.key FROM ${this.t.meta} m
         LEFT JOIN LATERAL (SELECT revision, key FROM ${this.t.changes} WHERE revision > $1
                             ORDER BY revision, key LIMIT $2) c ON true
        WHERE m.id = 1`,
      [after, limit],
    );
    if (rows.length === 0) throw tablesGone(this.t);
    return {
      revision: Number(rows[0].current),
      compacted: Number(rows[0].compacted),
      rows: rows.filter((row) => row.revision !== null).map((row) => ({ revision: Number(row.revision), key: row.key! })),
    };
  }

  private async clock(client: pg.ClientBase): Promise<void> {
    const sent = Date.now();
    const { rows } = await client.query<{ now: number }>(`SELECT ${NOW_MS} AS now`);
    this.offset = Number(rows[0].now) - Math.round((sent + Date.now()) / 2);
  }
}

function tablesGone(t: Tables): Error {
  return new Error(`the store's tables in schema "${t.schema}" are missing or empty (dropped while the server was running?)`);
}

/** Errors of the connection itself (refused, reset, timed out), as opposed to an SQL error or a caller's error. */
function isDriverError(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return false;
  const e = error as { code?: unknown; message?: unknown } | null;
  if (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code)) return true;
  return typeof e?.message === 'string' && /Connection terminated|timeout|not queryable|Client was closed/i.test(e.message);
}

/** One line naming the cause of a failed open: the driver's message, or each address tried when all were refused. */
export function describeError(error: unknown): string {
  const errors = (error as { errors?: unknown[] } | null)?.errors;
  if (Array.isArray(errors) && errors.length > 0) {
    return [...new Set(errors.map((e) => (e as Error).message))].join('; ');
  }
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] || String((error as { code?: unknown })?.code ?? 'unknown error');
}
