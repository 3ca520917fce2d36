// The SQLite backend's database: opening it, table names, schema version and migration, prepared statements, rows.
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import Keyv from 'keyv';
import { decodeEnvelope, deserialize, envelopeText, serialize } from '../codec.js';
import { Scratch } from '../json-text.js';
import { legacyMetaKey } from '../keys.js';
import { newerLayout } from '../layout.js';
import { KeyvSqlite } from './keyv-sqlite.js';
import { HEAD_CHARS, KNOWN_FROM_BYTES, type WrittenRow } from '../known-records.js';
import { FileIdentityCheck, explainOpenFailure, makeDirectory } from './files.js';
import type { RangeQuery, StoredRecord, Writes } from '../types.js';

/** The records table: `key`, `value` (`{"value": record}` JSON), and `exp` and `del_at` for listing and sweeps. */
const TABLE = 'blackboard';
const META = 'blackboard_meta';
const CHANGES = 'blackboard_changes';
const SCHEMA = 2;
// A bound LIMIT is written `+?`: the planner reads a bare `LIMIT ?`, and binding it then makes SQLite prepare the
// statement again on every run (3-6 µs each time; the plan is the same).

/**
 * A row as a transaction reads it: its text under {@link KNOWN_FROM_BYTES} bytes (or the threshold the database was
 * opened with); else (`value` null) its size and first characters, to be found among the records this process knows or read
 * whole (see `KnownRecords`).
 */
export type SizedRow = { key: string; value: string | null; bytes: number; head: string | null };

/** An opened database: the writer and reader connections, their statements, the reader's Keyv, the files' identity. */
export interface SqliteDatabase {
  /** the connection that owns every write */
  writer: Database.Database;
  /** the connection that only ever sees committed data */
  reader: Database.Database;
  w: WriterStatements;
  r: ReaderStatements;
  /** Keyv over {@link KeyvSqlite} on the reader: single-record reads */
  keyv: Keyv<StoredRecord>;
  /** which database, -wal and -shm files were opened */
  files: FileIdentityCheck;
}

/**
 * Opens (creating or upgrading) the database at `path`. Several processes may open a new or old file at once:
 * schema creation and migration happen in one `BEGIN IMMEDIATE` transaction that only one of them gets at a time,
 * the others retry after a random pause and then find the work done.
 */
export async function openDatabase(
  path: string,
  synchronous: 'FULL' | 'NORMAL',
  busyTimeoutMs: number,
  knownFromBytes = KNOWN_FROM_BYTES,
): Promise<SqliteDatabase> {
  makeDirectory(dirname(path));
  const deadline = Date.now() + busyTimeoutMs;
  for (let attempt = 0; ; attempt++) {
    let writer: Database.Database | undefined;
    let reader: Database.Database | undefined;
    try {
      writer = new Database(path, { timeout: 0 });
      writer.pragma('journal_mode = WAL');
      migrate(writer);
      writer.pragma(`synchronous = ${synchronous}`);
      const w = writerStatements(writer, knownFromBytes);
      reader = new Database(path, { timeout: 0 });
      const r = readerStatements(reader, knownFromBytes);
      const adapter = new KeyvSqlite({ db: reader, table: TABLE, keySize: 4096 });
      const keyv = new Keyv<StoredRecord>({
        store: adapter,
        namespace: undefined,
        useKeyPrefix: false,
        serialize,
        deserialize,
        throwOnErrors: true,
      });
      keyv.on('error', () => {}); // failures surface as rejected calls; an unheard 'error' event would crash
      // Both connections have read the database in WAL mode, so the -wal and -shm files exist and stay for as
      // long as either connection is open: record which files they are.
      r.revision.get();
      const files = new FileIdentityCheck([path, `${path}-wal`, `${path}-shm`]);
      return { writer, reader, w, r, keyv, files };
    } catch (error) {
      reader?.close();
      writer?.close();
      if (!isBusy(error) || Date.now() > deadline) throw explainOpenFailure(path, error);
      await sleep(Math.min(200, 5 * 2 ** attempt) * (0.5 + Math.random()));
    }
  }
}

/**
 * What an existing file holds, read without changing it: a blackboard store, an empty database (no tables, or an
 * empty file), or another program's SQLite database (its tables listed). `unreadable` when SQLite cannot tell (not a
 * database, locked): opening it for real then reports why.
 */
export function inspectFile(path: string): { kind: 'blackboard' | 'empty' | 'unreadable' } | { kind: 'foreign'; tables: string[] } {
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true, timeout: 0 });
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>).map(
      (t) => t.name,
    );
    if (tables.length === 0) return { kind: 'empty' };
    return tables.includes(TABLE) && tables.includes(META)
      ? { kind: 'blackboard' }
      : tables.length === 1 && tables[0] === TABLE
        ? { kind: 'blackboard' }
        : { kind: 'foreign', tables };
  } catch {
    return { kind: 'unreadable' };
  } finally {
    db?.close();
  }
}

/** Whether `error` is SQLite meeting another connection's lock (SQLITE_BUSY or SQLITE_LOCKED, any extended code). */
export const isBusy = (error: unknown): boolean => /^SQLITE_(BUSY|LOCKED)/.test(String((error as { code?: unknown } | null)?.code ?? ''));

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Creates the schema, or upgrades a file made by the previous version (records in `blackboard(key, value)` as
 * `{"value": record}` JSON, the revision in a row of that table), in one `BEGIN IMMEDIATE` transaction: idempotent,
 * and safe when several processes open the file at once (the losers get SQLITE_BUSY and retry, then find it done).
 *
 * Version 2 adds `exp` and `del_at` columns (the record's expiry, and its time when it is a tombstone) so that listing,
 * expiry and tombstone sweeps never parse JSON in SQL, a `blackboard_meta` table (revision, compacted) and the change
 * log `blackboard_changes`.
 */
function migrate(db: Database.Database): void {
  // A store already at this layout needs no write lock: a process joining busy writers must not starve waiting for one.
  if (currentLayout(db) === SCHEMA) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS ${TABLE}(key VARCHAR(4096) PRIMARY KEY, value TEXT);
      CREATE TABLE IF NOT EXISTS ${META}(name TEXT PRIMARY KEY, value INTEGER NOT NULL);`);
    const schema = (db.prepare(`SELECT value FROM ${META} WHERE name = 'schema'`).get() as { value: number } | undefined)?.value ?? 0;
    if (schema > SCHEMA) throw newerLayout(schema, SCHEMA);
    if (schema < SCHEMA) {
      const columns = new Set((db.pragma(`table_info(${TABLE})`) as Array<{ name: string }>).map((c) => c.name));
      if (!columns.has('exp')) db.exec(`ALTER TABLE ${TABLE} ADD COLUMN exp INTEGER`);
      if (!columns.has('del_at')) db.exec(`ALTER TABLE ${TABLE} ADD COLUMN del_at INTEGER`);
      db.exec(`UPDATE ${TABLE} SET exp = json_extract(value, '$.value.exp'),
          del_at = CASE WHEN json_extract(value, '$.value.del') = 1 THEN json_extract(value, '$.value.at') END
        WHERE json_valid(value);
        DROP INDEX IF EXISTS ${TABLE}_exp;
        CREATE INDEX IF NOT EXISTS ${TABLE}_expiry ON ${TABLE}(exp) WHERE exp IS NOT NULL;
        CREATE INDEX IF NOT EXISTS ${TABLE}_tombstones ON ${TABLE}(del_at) WHERE del_at IS NOT NULL;
        CREATE TABLE IF NOT EXISTS ${CHANGES}(rev INTEGER NOT NULL, key TEXT NOT NULL, ver INTEGER NOT NULL,
          del INTEGER NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (rev, key)) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS ${CHANGES}_at ON ${CHANGES}(at);
        INSERT OR IGNORE INTO ${META}(name, value) VALUES ('revision', 0), ('compacted', 0);`);
      // The previous version kept the revision (and the compaction mark) as rows of the records table.
      for (const name of ['revision', 'compacted'] as const) {
        const row = db.prepare(`SELECT value FROM ${TABLE} WHERE key = ?`).get(legacyMetaKey(name)) as { value: string } | undefined;
        if (!row) continue;
        let old = 0;
        try {
          const parsed = JSON.parse(row.value) as { value?: unknown };
          if (Number.isSafeInteger(parsed.value)) old = parsed.value as number;
        } catch {
          // unreadable: the revision is still raised past every record and change below
        }
        db.prepare(`UPDATE ${META} SET value = max(value, ?) WHERE name = ?`).run(old, name);
        db.prepare(`DELETE FROM ${TABLE} WHERE key = ?`).run(legacyMetaKey(name));
      }
      // Never below a revision that a record or a change already carries.
      db.exec(`UPDATE ${META} SET value = max(value,
          (SELECT coalesce(max(json_extract(value, '$.value.rev')), 0) FROM ${TABLE} WHERE json_valid(value)),
          (SELECT coalesce(max(rev), 0) FROM ${CHANGES})) WHERE name = 'revision'`);
      db.prepare(`INSERT INTO ${META}(name, value) VALUES ('schema', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value`).run(
        SCHEMA,
      );
    }
    db.exec('COMMIT');
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** The writer connection's prepared statements. */
export type WriterStatements = ReturnType<typeof writerStatements>;
/** The reader connection's prepared statements. */
export type ReaderStatements = ReturnType<typeof readerStatements>;

/** Statements of the writer connection, prepared once. */
export function writerStatements(db: Database.Database, knownFromBytes = KNOWN_FROM_BYTES) {
  return {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT tx'),
    release: db.prepare('RELEASE tx'),
    rollbackTo: db.prepare('ROLLBACK TO tx'),
    revision: db.prepare<[], { value: number }>(`SELECT value FROM ${META} WHERE name = 'revision'`),
    setRevision: db.prepare<[number]>(`UPDATE ${META} SET value = ? WHERE name = 'revision'`),
    /** upserts of 1 to {@link ROWS_PER_STATEMENT} records in one statement, by count */
    putRows: rowStatements((n) =>
      db.prepare(
        `INSERT INTO ${TABLE}(key, value, exp, del_at) VALUES ${Array(n).fill('(?, CAST(? AS TEXT), ?, ?)').join(', ')}
         ON CONFLICT(key) DO UPDATE SET value = excluded.value, exp = excluded.exp, del_at = excluded.del_at`,
      ),
    ),
    /** change log rows, 1 to {@link ROWS_PER_STATEMENT} in one statement, by count */
    logRows: rowStatements((n) =>
      db.prepare(`INSERT INTO ${CHANGES}(rev, key, ver, del, at) VALUES ${Array(n).fill('(?, ?, ?, ?, ?)').join(', ')}`),
    ),
    remove: db.prepare<[string]>(`DELETE FROM ${TABLE} WHERE key = ?`),
    prune: db.prepare<[number, number], { revision: number }>(
      `DELETE FROM ${CHANGES} WHERE (rev, key) IN
         (SELECT rev, key FROM ${CHANGES} WHERE at <= ? ORDER BY at LIMIT +?) RETURNING rev AS revision`,
    ),
    raiseCompacted: db.prepare<[number]>(`UPDATE ${META} SET value = max(value, ?) WHERE name = 'compacted'`),
    ...sizedStatements(db, knownFromBytes),
  };
}

/** Statements of the reader connection, prepared once. */
export function readerStatements(db: Database.Database, knownFromBytes = KNOWN_FROM_BYTES) {
  return {
    /** runs `read` in one read transaction, so that everything it reads comes from one snapshot */
    snapshot: <T>(read: () => T): T => db.transaction(read)(),
    revision: db.prepare<[], { value: number }>(`SELECT value FROM ${META} WHERE name = 'revision'`),
    compacted: db.prepare<[], { value: number }>(`SELECT value FROM ${META} WHERE name = 'compacted'`),
    due: db.prepare<[number, number, number], { key: string }>(
      `SELECT key FROM ${TABLE} WHERE exp <= ? UNION SELECT key FROM ${TABLE} WHERE del_at <= ? LIMIT +?`,
    ),
    changes: db.prepare<[number, string, string, number], { revision: number; key: string; version: number; deleted: number }>(
      `SELECT rev AS revision, key, ver AS version, del AS deleted FROM ${CHANGES} WHERE rev > ? AND key >= ? AND key < ?
       ORDER BY rev, key LIMIT +?`,
    ),
    since: db.prepare<[number, number], { revision: number; key: string }>(
      `SELECT rev AS revision, key FROM ${CHANGES} WHERE rev > ? ORDER BY rev, key LIMIT +?`,
    ),
    /** the change log after one of its rows (keyset on the primary key): the next page of a commit cut by the limit */
    sinceRow: db.prepare<[number, string, number], { revision: number; key: string }>(
      `SELECT rev AS revision, key FROM ${CHANGES} WHERE (rev, key) > (?, ?) ORDER BY rev, key LIMIT +?`,
    ),
    ...sizedStatements(db, knownFromBytes),
  };
}

/** The columns of a {@link SizedRow}, whose text comes whole under `fromBytes`. */
const sizedColumns = (fromBytes: number): string =>
  `key, CASE WHEN octet_length(value) < ${fromBytes} THEN value END AS value, octet_length(value) AS bytes,
  CASE WHEN octet_length(value) >= ${fromBytes} THEN substr(value, 1, ${HEAD_CHARS}) END AS head`;

type RangeParams = { lo: string; hi: string; now: number; limit: number };

/** The statements both connections read records by size with (see `SizedReads`). */
export type SizedStatements = ReturnType<typeof sizedStatements>;

/**
 * A record's whole text, a record as a {@link SizedRow}, and the live records of a key range as {@link SizedRow}s, in
 * key order: `[lo, hi)` from the start, or after a key.
 */
function sizedStatements(db: Database.Database, knownFromBytes: number) {
  const sized = sizedColumns(knownFromBytes);
  const live = 'del_at IS NULL AND (exp IS NULL OR exp > @now)';
  return {
    get: db.prepare<[string], { value: string }>(`SELECT value FROM ${TABLE} WHERE key = ?`),
    getSized: db.prepare<[string], SizedRow>(`SELECT ${sized} FROM ${TABLE} WHERE key = ?`),
    rangeFrom: db.prepare<RangeParams, SizedRow>(
      `SELECT ${sized} FROM ${TABLE} WHERE key >= @lo AND key < @hi AND ${live} ORDER BY key LIMIT +@limit`,
    ),
    rangeAfter: db.prepare<RangeParams, SizedRow>(
      `SELECT ${sized} FROM ${TABLE} WHERE key > @lo AND key < @hi AND ${live} ORDER BY key LIMIT +@limit`,
    ),
  };
}

/** The live records of `query`'s range, as rows, through either connection's statements. */
export function range(statements: SizedStatements, query: RangeQuery): SizedRow[] {
  const params = { hi: query.hi, now: query.now, limit: query.limit };
  // `after` below `lo` changes nothing; compared as SQLite compares (code points), not as JS compares (UTF-16).
  return query.after !== undefined && Buffer.compare(Buffer.from(query.after), Buffer.from(query.lo)) >= 0
    ? statements.rangeAfter.all({ ...params, lo: query.after })
    : statements.rangeFrom.all({ ...params, lo: query.lo });
}

/** Where {@link writeRows} writes large texts (see `Scratch`). */
const scratch = new Scratch();

/** The most rows one write statement carries (a transaction with more runs it again). */
const ROWS_PER_STATEMENT = 16;

/** Statements for 1 to ROWS_PER_STATEMENT rows, prepared on first use. */
function rowStatements(prepare: (rows: number) => Database.Statement): (rows: number) => Database.Statement {
  const made: Database.Statement[] = [];
  return (rows) => (made[rows] ??= prepare(rows));
}

/** Runs `params` (each row's values, flattened) through the statement for that many rows, a full statement at a time. */
function runRows(statement: (rows: number) => Database.Statement, params: unknown[], width: number): void {
  const per = ROWS_PER_STATEMENT * width;
  for (let i = 0; i < params.length; i += per) {
    const chunk = params.slice(i, i + per);
    statement(chunk.length / width).run(...chunk);
  }
}

/**
 * Writes a transaction's records through the writer's statements, each at `revision` (a `null` record deletes its
 * row), and logs those marked to be logged, at `now`: the records in one statement and their change log rows in
 * another (per 16), so a commit costs the same few statements whatever it writes. Returns what it wrote, by key.
 */
export function writeRows(w: WriterStatements, writes: Writes, revision: number, now: number): WrittenRow[] {
  // a large text goes as UTF-8 bytes, stored as text (CAST), used by the statements below before anything else runs
  scratch.reset();
  const puts: unknown[] = [];
  const logs: unknown[] = [];
  const written: WrittenRow[] = [];
  for (const [key, write] of writes) {
    if (write.record === null) {
      w.remove.run(key);
      written.push([key, null]);
      continue;
    }
    const record: StoredRecord = { rev: revision, ...write.record };
    const text = envelopeText(record, scratch);
    puts.push(key, text, record.exp ?? null, record.del === 1 ? record.at : null);
    written.push([
      key,
      { text: typeof text === 'string' ? text : { bytes: text.length, head: text.toString('latin1', 0, HEAD_CHARS) }, record },
    ]);
    if (write.log) logs.push(revision, key, record.ver, record.del === 1 ? 1 : 0, now);
  }
  if (puts.length > 0) runRows(w.putRows, puts, 4);
  if (logs.length > 0) runRows(w.logRows, logs, 5);
  return written;
}

/** A listed row's record, or `undefined` when it is corrupt (skipped in listings). */
export function decode(raw: string): StoredRecord | undefined {
  try {
    return decodeEnvelope('', raw);
  } catch {
    return undefined;
  }
}

/** The layout recorded in an existing store, read without a lock (0 when there is none yet). */
function currentLayout(db: Database.Database): number {
  const meta = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?`).get(META);
  if (meta === undefined) return 0;
  return (db.prepare(`SELECT value FROM ${META} WHERE name = 'schema'`).get() as { value: number } | undefined)?.value ?? 0;
}
