// A Keyv 5 store adapter over one better-sqlite3 connection (the shape @keyv/sqlite 6 has), run under @keyv/test-suite.
import { EventEmitter } from 'node:events';
import Database from 'better-sqlite3';
import type { KeyvStoreAdapter, StoredData } from 'keyv';

/** How {@link KeyvSqlite} finds its database and table. */
export interface KeyvSqliteOptions {
  /** `sqlite://path/to/file.db` or a plain path; ignored when `db` is given (default: an in-memory database) */
  uri?: string;
  /** an open connection to use instead of opening `uri`; it stays the caller's to close */
  db?: Database.Database;
  /** table name (letters, digits, `_`; default `keyv`) */
  table?: string;
  /** declared key column size, as @keyv/sqlite declares it (SQLite itself does not enforce it; default 255) */
  keySize?: number;
  /** how long a statement waits for another connection's lock, in ms (default 5000) */
  busyTimeout?: number;
  /** switch the database to WAL when opening `uri` */
  wal?: boolean;
}

/**
 * Values are kept as text under their keys in a `(key, value)` table. Keyv prefixes keys with `<namespace>:`; the
 * whole-namespace methods (`clear`, `iterator`) select the half-open key range `[namespace:, namespace;)` — never a
 * LIKE pattern, so `%` and `_` in keys are ordinary characters and one namespace never matches another's keys.
 * Every statement is prepared once and runs synchronously on the connection (no thread-pool hops).
 */
export class KeyvSqlite extends EventEmitter implements KeyvStoreAdapter {
  readonly ttlSupport = false;
  /** the options, with `dialect` and `url` as Keyv looks for them (Keyv iterates stores whose dialect it knows) */
  readonly opts: Required<Pick<KeyvSqliteOptions, 'table' | 'keySize'>> & KeyvSqliteOptions & { dialect: 'sqlite'; url: string };
  namespace?: string;
  /** the connection, for callers that run their own statements beside Keyv's */
  readonly db: Database.Database;
  private readonly owned: boolean;
  private readonly sql: {
    get: Database.Statement<[string], { value: string }>;
    getMany: Database.Statement<[string], { key: string; value: string }>;
    set: Database.Statement<[string, string]>;
    delete: Database.Statement<[string]>;
    deleteMany: Database.Statement<[string]>;
    clearAll: Database.Statement<[]>;
    clearRange: Database.Statement<[string, string]>;
    first: Database.Statement<{ lo: string; hi: string | null; limit: number }, { key: string; value: string }>;
    next: Database.Statement<{ after: string; hi: string | null; limit: number }, { key: string; value: string }>;
  };

  constructor(options: KeyvSqliteOptions | string = {}) {
    super();
    const o = typeof options === 'string' ? { uri: options } : options;
    const table = String(o.table ?? 'keyv').replace(/[^A-Za-z0-9_]/g, '');
    if (!/^[A-Za-z_]/.test(table)) throw new Error(`Invalid table name "${o.table}": use letters, digits and _.`);
    this.opts = { ...o, table, keySize: o.keySize ?? 255, dialect: 'sqlite', url: o.uri ?? 'sqlite://:memory:' };
    this.owned = o.db === undefined;
    this.db = o.db ?? new Database((o.uri ?? ':memory:').replace(/^sqlite:\/\//, ''), { timeout: o.busyTimeout ?? 5000 });
    if (this.owned && o.wal) this.db.pragma('journal_mode = WAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS ${table}(key VARCHAR(${this.opts.keySize}) PRIMARY KEY, value TEXT)`);
    this.sql = {
      get: this.db.prepare(`SELECT value FROM ${table} WHERE key = ?`),
      getMany: this.db.prepare(`SELECT key, value FROM ${table} WHERE key IN (SELECT value FROM json_each(?))`),
      set: this.db.prepare(`INSERT INTO ${table}(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`),
      delete: this.db.prepare(`DELETE FROM ${table} WHERE key = ?`),
      deleteMany: this.db.prepare(`DELETE FROM ${table} WHERE key IN (SELECT value FROM json_each(?))`),
      clearAll: this.db.prepare(`DELETE FROM ${table}`),
      clearRange: this.db.prepare(`DELETE FROM ${table} WHERE key >= ? AND key < ?`),
      // `LIMIT +@limit`, not `LIMIT @limit`: a bare bound LIMIT makes SQLite prepare the statement again on every run
      first: this.db.prepare(`SELECT key, value FROM ${table} WHERE key >= @lo AND (@hi IS NULL OR key < @hi) ORDER BY key LIMIT +@limit`),
      next: this.db.prepare(`SELECT key, value FROM ${table} WHERE key > @after AND (@hi IS NULL OR key < @hi) ORDER BY key LIMIT +@limit`),
    };
  }

  async get<Value>(key: string): Promise<StoredData<Value> | undefined> {
    return this.sql.get.get(key)?.value as StoredData<Value> | undefined;
  }

  async getMany<Value>(keys: string[]): Promise<Array<StoredData<Value | undefined>>> {
    const found = new Map(this.sql.getMany.all(JSON.stringify(keys)).map((row) => [row.key, row.value]));
    return keys.map((key) => found.get(key) as StoredData<Value | undefined>);
  }

  async set(key: string, value: unknown): Promise<void> {
    this.sql.set.run(key, typeof value === 'string' ? value : JSON.stringify(value));
  }

  async setMany(entries: Array<{ key: string; value: unknown }>): Promise<void> {
    this.db.transaction(() => {
      for (const { key, value } of entries) this.sql.set.run(key, typeof value === 'string' ? value : JSON.stringify(value));
    })();
  }

  async delete(key: string): Promise<boolean> {
    return this.sql.delete.run(key).changes > 0;
  }

  async deleteMany(keys: string[]): Promise<boolean> {
    return this.sql.deleteMany.run(JSON.stringify(keys)).changes > 0;
  }

  async has(key: string): Promise<boolean> {
    return this.sql.get.get(key) !== undefined;
  }

  async hasMany(keys: string[]): Promise<boolean[]> {
    return (await this.getMany(keys)).map((value) => value !== undefined);
  }

  async clear(): Promise<void> {
    if (this.namespace === undefined) this.sql.clearAll.run();
    else this.sql.clearRange.run(...range(this.namespace));
  }

  /** Every `[key, value]` of the namespace (all keys without one), in key order, a page at a time. */
  async *iterator<Value>(namespace?: string): AsyncGenerator<Array<string | Awaited<Value> | undefined>, void> {
    const [lo, hi] = namespace === undefined ? ['', null] : range(namespace);
    let rows = this.sql.first.all({ lo, hi, limit: 100 });
    for (;;) {
      for (const row of rows) yield [row.key, row.value as Awaited<Value>];
      if (rows.length < 100) return;
      rows = this.sql.next.all({ after: rows[rows.length - 1].key, hi, limit: 100 });
    }
  }

  async disconnect(): Promise<void> {
    if (this.owned && this.db.open) this.db.close();
  }
}

/** The keys Keyv writes for a namespace: `namespace:` up to, not including, `namespace;` (`;` follows `:`). */
const range = (namespace: string): [string, string] => [`${namespace}:`, `${namespace};`];
