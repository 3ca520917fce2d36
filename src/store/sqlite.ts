import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Keyv from 'keyv';
import KeyvSqlite from '@keyv/sqlite';
import { BlackboardError } from '../errors.js';
import { Mutex } from './mutex.js';
import { decodeRecord, encodeRecord, serialize, deserialize, isRecord, corrupt } from './codec.js';
import { SEP, compareKeys } from './keys.js';
import type { Backend, BackendTx, ChangeQuery, ChangeRow, CommitEvent, RangeQuery, StoredRecord, TxContext, Writes } from './types.js';

export interface SqliteOptions {
  /** How long a writer waits for another process's write lock before STORE_UNAVAILABLE (default 10 s). */
  busyTimeoutMs?: number;
  /** `FULL` fsyncs the WAL on every commit (survives power loss); `NORMAL` survives process crashes and `kill -9`. */
  synchronous?: 'FULL' | 'NORMAL';
  /** How often another process's commits are looked for while somebody watches. */
  pollMs?: number;
}

type Query = (sql: string, params?: unknown[]) => Promise<Array<Record<string, unknown>>>;

const TABLE = 'blackboard';
const REVISION_KEY = `m${SEP}revision`;
const COMPACTED_KEY = `m${SEP}compacted`;
const CHANGES = `${TABLE}_changes`;
const EXP = `json_extract(value, '$.value.exp')`;
const DEL = `json_extract(value, '$.value.del')`;

/**
 * The default backend: one SQLite file through `@keyv/sqlite`, shared safely by any number of processes.
 *
 * Two connections: a reader (Keyv's `get`, listings) that never sees an uncommitted write, and a writer that runs
 * each transaction as `BEGIN IMMEDIATE … COMMIT` through the adapter's `query()`. `BEGIN IMMEDIATE` takes SQLite's
 * write lock up front, so read-decide-write is atomic across processes and never fails half-way with "database is
 * locked"; a busy timeout makes a second process wait its turn instead. WAL lets readers run during a write.
 */
export class SqliteBackend implements Backend {
  readonly description: string;
  readonly shared = true;
  private readonly lock = new Mutex();
  private readonly foreignListeners = new Set<(event: CommitEvent) => void>();
  private lastRevision = -1;
  private poller?: NodeJS.Timeout;
  private polling = false;

  /** the file's identity at open: a removed or replaced file must fail loudly, never swallow writes */
  private readonly inode?: { dev: number; ino: number };

  private constructor(
    readonly path: string,
    private readonly readerKeyv: Keyv<StoredRecord>,
    private readonly read: Query,
    private readonly write: Query,
    private readonly closeAll: () => Promise<void>,
    private readonly pollMs: number,
    private readonly busyTimeoutMs: number,
  ) {
    this.description = `sqlite://${path}`;
    if (path !== ':memory:') {
      const st = statSync(path);
      this.inode = { dev: st.dev, ino: st.ino };
    }
  }

  /**
   * An open SQLite connection keeps writing into a file that was deleted or replaced under it, and everything
   * written would vanish at restart. A stat (a few microseconds) before each operation turns that into
   * STORE_UNAVAILABLE instead.
   */
  private checkFile(): void {
    if (!this.inode) return;
    let st;
    try {
      st = statSync(this.path);
    } catch {
      st = undefined;
    }
    if (!st || st.dev !== this.inode.dev || st.ino !== this.inode.ino) {
      throw new BlackboardError(
        'STORE_UNAVAILABLE',
        `The database file ${this.path} was removed or replaced while the server was running, so nothing can be read or written safely. Nothing was changed; ask the operator to restore the file and restart the server.`,
        { cause: 'STORE_FILE_GONE' },
      );
    }
  }

  static async open(path: string, options: SqliteOptions = {}): Promise<SqliteBackend> {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    const busyTimeout = options.busyTimeoutMs ?? 10_000;
    // The writer creates and migrates the schema first; only then is the reader opened. Two connections (or two
    // processes) creating a table at once deadlock in SQLite and one gets SQLITE_BUSY at once, without waiting, so
    // the first start-up of several processes on a new file is retried until one of them has created it.
    const writer = await connect(path, busyTimeout, async (write) => {
      await write('PRAGMA journal_mode = WAL');
      await write('BEGIN IMMEDIATE');
      try {
        await write(`CREATE INDEX IF NOT EXISTS ${TABLE}_exp ON ${TABLE}(${EXP}) WHERE ${EXP} IS NOT NULL`);
        await write(
          `CREATE TABLE IF NOT EXISTS ${CHANGES}(rev INTEGER NOT NULL, key TEXT NOT NULL, ver INTEGER NOT NULL, del INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (rev, key)) WITHOUT ROWID`,
        );
        await write(`INSERT OR IGNORE INTO ${TABLE}(key, value) VALUES (?, ?)`, [REVISION_KEY, serialize({ value: 0 })]);
        await write('COMMIT');
      } catch (error) {
        await write('ROLLBACK').catch(() => {});
        throw error;
      }
      await write(`PRAGMA synchronous = ${options.synchronous ?? 'FULL'}`);
    });
    let reader: KeyvSqlite;
    try {
      reader = await connect(path, busyTimeout, async (read) => void (await read('SELECT 1')));
    } catch (error) {
      await writer.disconnect().catch(() => {});
      throw error;
    }
    const readerKeyv = new Keyv<StoredRecord>({
      store: reader,
      namespace: undefined,
      useKeyPrefix: false,
      serialize,
      deserialize,
      throwOnErrors: true,
    });
    readerKeyv.on('error', () => {});
    const closeAll = async (): Promise<void> => {
      await Promise.allSettled([writer.disconnect(), reader.disconnect()]);
    };
    return new SqliteBackend(path, readerKeyv, queryOf(reader), queryOf(writer), closeAll, options.pollMs ?? 25, busyTimeout);
  }


  now(): number {
    return Date.now();
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    this.checkFile();
    let record: unknown;
    try {
      record = await this.readerKeyv.get(key);
    } catch (error) {
      if (error instanceof SyntaxError) throw corrupt(key);
      throw error;
    }
    if (record === undefined) return undefined;
    if (!isRecord(record)) throw corrupt(key);
    return record;
  }

  async list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    this.checkFile();
    // One statement, so the rows and the revision come from the same read snapshot.
    const [where, params] = rangeWhere(query);
    const rows = await this.read(
      `SELECT r.value AS rev, d.key AS key, d.value AS value
         FROM (SELECT value FROM ${TABLE} WHERE key = ?) AS r
         LEFT JOIN (SELECT key, value FROM ${TABLE} WHERE ${where} ORDER BY key LIMIT ?) AS d ON 1
        ORDER BY d.key`,
      [REVISION_KEY, ...params, query.limit],
    );
    const revision = rows.length > 0 ? parseRevision(rows[0].rev) : 0;
    return { rows: decodeRows(rows.filter((row) => row.key !== null)), revision };
  }

  async revision(): Promise<number> {
    const rows = await this.read(`SELECT value FROM ${TABLE} WHERE key = ?`, [REVISION_KEY]);
    return rows.length > 0 ? parseRevision(rows[0].value) : 0;
  }

  async transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[] = [],
  ): Promise<{ result: T; revision: number }> {
    return this.lock.run(async () => {
      this.checkFile();
      const w = this.write;
      await this.begin();
      try {
        // The revision and the prefetched keys in one statement.
        const first = await w(`SELECT key, value FROM ${TABLE} WHERE key IN (SELECT value FROM json_each(?))`, [
          JSON.stringify([REVISION_KEY, ...prefetch]),
        ]);
        const fetched = new Map(first.map((row) => [String(row.key), String(row.value)]));
        const revRaw = fetched.get(REVISION_KEY);
        const revision = revRaw !== undefined ? parseRevision(revRaw) : 0;
        const tx: BackendTx = {
          get: async (key) => {
            if (prefetch.includes(key)) {
              const raw = fetched.get(key);
              return raw === undefined ? undefined : decodeRecord(key, raw);
            }
            const rows = await w(`SELECT value FROM ${TABLE} WHERE key = ?`, [key]);
            return rows.length > 0 ? decodeRecord(key, String(rows[0].value)) : undefined;
          },
          list: async (query) => {
            const [where, params] = rangeWhere(query);
            const rows = await w(`SELECT key, value FROM ${TABLE} WHERE ${where} ORDER BY key LIMIT ?`, [
              ...params,
              query.limit,
            ]);
            return decodeRows(rows);
          },
        };
        const now = Date.now();
        const { result, writes } = await fn(tx, { revision, now });
        let next = revision;
        if (writes.size > 0) {
          next = revision + 1;
          const puts: Array<[string, string]> = [[REVISION_KEY, serialize({ value: next })]];
          const deletes: string[] = [];
          const logged: Array<[number, string, number, number, number]> = [];
          for (const [key, { record, log }] of writes) {
            if (record === null) deletes.push(key);
            else {
              puts.push([key, encodeRecord({ ...record, rev: next })]);
              if (log) logged.push([next, key, record.ver, record.del === 1 ? 1 : 0, now]);
            }
          }
          if (logged.length > 0) {
            await w(
              `INSERT INTO ${CHANGES}(rev, key, ver, del, at)
                 SELECT j.value ->> 0, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4 FROM json_each(?) AS j`,
              [JSON.stringify(logged)],
            );
          }
          await w(
            `INSERT INTO ${TABLE}(key, value)
               SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]') FROM json_each(?) AS j WHERE true
               ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
            [JSON.stringify(puts)],
          );
          if (deletes.length > 0) {
            await w(`DELETE FROM ${TABLE} WHERE key IN (SELECT value FROM json_each(?))`, [JSON.stringify(deletes)]);
          }
        }
        await w('COMMIT');
        return { result, revision: next };
      } catch (error) {
        await w('ROLLBACK').catch(() => {});
        throw error;
      }
    });
  }

  /**
   * Takes the write lock (`BEGIN IMMEDIATE`), waiting for another process to release it with jittered backoff, up to
   * the busy timeout; then SQLITE_BUSY surfaces as STORE_UNAVAILABLE.
   */
  private async begin(): Promise<void> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.write('BEGIN IMMEDIATE');
        return;
      } catch (error) {
        if (!isBusy(error) || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(25, 2 ** Math.min(attempt, 5)) * (0.5 + Math.random())));
      }
    }
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    this.checkFile();
    const rows = await this.read(
      `SELECT key FROM ${TABLE} WHERE ${EXP} IS NOT NULL AND ${EXP} <= ?
       UNION SELECT key FROM ${TABLE} WHERE ${DEL} = 1 AND json_extract(value, '$.value.at') <= ? LIMIT ?`,
      [query.now, query.tombstonesBefore, query.limit],
    );
    return rows.map((row) => String(row.key));
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    this.checkFile();
    // One statement: the rows, the revision and the compaction mark come from the same read snapshot.
    const rows = await this.read(
      `SELECT (SELECT value FROM ${TABLE} WHERE key = ?) AS revision, (SELECT value FROM ${TABLE} WHERE key = ?) AS compacted,
              c.rev AS rev, c.key AS key, c.ver AS ver, c.del AS del
         FROM (SELECT 1) LEFT JOIN (SELECT rev, key, ver, del FROM ${CHANGES} WHERE rev > ? AND key >= ? AND key < ?
                                    ORDER BY rev, key LIMIT ?) AS c ON 1
        ORDER BY c.rev, c.key`,
      [REVISION_KEY, COMPACTED_KEY, query.after, query.lo, query.hi, query.limit],
    );
    const head = rows[0] ?? {};
    return {
      changes: rows
        .filter((row) => row.rev !== null)
        .map((row) => ({ revision: Number(row.rev), key: String(row.key), version: Number(row.ver), deleted: Number(row.del) === 1 })),
      revision: head.revision == null ? 0 : parseRevision(head.revision),
      compacted: head.compacted == null ? 0 : parseRevision(head.compacted),
    };
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    return this.lock.run(async () => {
      this.checkFile();
      await this.begin();
      try {
        const rows = await this.write(
          `DELETE FROM ${CHANGES} WHERE (rev, key) IN (SELECT rev, key FROM ${CHANGES} WHERE at <= ? ORDER BY rev LIMIT ?) RETURNING rev`,
          [before, limit],
        );
        if (rows.length > 0) {
          const top = Math.max(...rows.map((row) => Number(row.rev)));
          await this.write(
            `INSERT INTO ${TABLE}(key, value) VALUES (?, ?)
               ON CONFLICT(key) DO UPDATE SET value = json_object('value', max(json_extract(value, '$.value'), ${top}))`,
            [COMPACTED_KEY, serialize({ value: top })],
          );
        }
        await this.write('COMMIT');
        return rows.length;
      } catch (error) {
        await this.write('ROLLBACK').catch(() => {});
        throw error;
      }
    });
  }

  onForeignCommit(listener: (event: CommitEvent) => void): () => void {
    this.foreignListeners.add(listener);
    if (!this.poller) {
      this.poller = setInterval(() => void this.poll(), this.pollMs);
      this.poller.unref();
    }
    return () => {
      this.foreignListeners.delete(listener);
      if (this.foreignListeners.size === 0 && this.poller) {
        clearInterval(this.poller);
        this.poller = undefined;
        this.lastRevision = -1;
      }
    };
  }

  async close(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    this.foreignListeners.clear();
    await this.lock.run(() => this.closeAll());
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      // The first poll reports a gap (covering commits made before polling began); later ones read the change
      // log since the last revision seen, so only the waiters of the changed keys wake.
      if (this.lastRevision < 0) {
        this.lastRevision = await this.revision();
        for (const listener of [...this.foreignListeners]) listener({ gap: true });
        return;
      }
      const page = await this.changes({ after: this.lastRevision, lo: '', hi: '\u{10ffff}', limit: 10_000 });
      if (page.revision === this.lastRevision) return;
      const event: CommitEvent =
        page.compacted > this.lastRevision || page.changes.length >= 10_000
          ? { gap: true }
          : { revision: page.revision, keys: [...new Set(page.changes.map((c) => c.key))] };
      this.lastRevision = page.revision;
      for (const listener of [...this.foreignListeners]) listener(event);
    } catch {
      // A failed poll is retried on the next tick; watchers still time out on their own.
    } finally {
      this.polling = false;
    }
  }
}

const queryOf =
  (store: KeyvSqlite): Query =>
  (sql, params = []) =>
    store.query(sql, ...params) as Promise<Array<Record<string, unknown>>>;

/**
 * How long one statement may wait for a lock inside SQLite. Kept short on purpose: SQLite waits by sleeping in a
 * libuv thread, and a few connections waiting at once would hold every thread of the pool, starving the very
 * connection that holds the lock. Longer waits (for the write lock) happen in {@link SqliteBackend.begin}, in JS.
 */
const STATEMENT_BUSY_MS = 20;

const isBusy = (error: unknown): boolean => /SQLITE_BUSY|SQLITE_LOCKED/.test(String((error as { code?: unknown })?.code ?? error));

/**
 * Opens one @keyv/sqlite connection and runs `init` on it. Initialisation uses a short busy timeout: connections
 * that meet while creating the schema can wait on each other's locks until both time out, so each gives up quickly,
 * closes, and retries after a random pause, for up to `busyTimeout` in all.
 */
async function connect(path: string, busyTimeout: number, init: (query: Query) => Promise<void>): Promise<KeyvSqlite> {
  const deadline = Date.now() + busyTimeout;
  for (let attempt = 0; ; attempt++) {
    const store = new KeyvSqlite({ uri: `sqlite://${path}`, table: TABLE, keySize: 4096, busyTimeout: 50 });
    store.on('error', () => {}); // failures surface as rejected queries; an unheard 'error' event would crash
    try {
      await init(queryOf(store));
      await queryOf(store)(`PRAGMA busy_timeout = ${STATEMENT_BUSY_MS}`);
      return store;
    } catch (error) {
      await store.disconnect().catch(() => {});
      if (!isBusy(error) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(200, 5 * 2 ** attempt) * (0.5 + Math.random())));
    }
  }
}

function rangeWhere(query: RangeQuery): [string, unknown[]] {
  const useAfter = query.after !== undefined && compareKeys(query.after, query.lo) >= 0;
  const from = useAfter ? 'key > ?' : 'key >= ?';
  const start = useAfter ? query.after : query.lo;
  return [`${from} AND key < ? AND ${DEL} IS NULL AND (${EXP} IS NULL OR ${EXP} > ?)`, [start, query.hi, query.now]];
}

function parseRevision(raw: unknown): number {
  const parsed = JSON.parse(String(raw)) as { value?: unknown };
  return typeof parsed.value === 'number' ? parsed.value : 0;
}

function decodeRows(rows: Array<Record<string, unknown>>): Array<[string, StoredRecord]> {
  const out: Array<[string, StoredRecord]> = [];
  for (const row of rows) {
    const key = String(row.key);
    try {
      out.push([key, decodeRecord(key, String(row.value))]);
    } catch {
      // A corrupt row is skipped in listings; reading that key directly reports it.
    }
  }
  return out;
}
