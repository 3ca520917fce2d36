// The Postgres backend's URL options and its schema: tables, creation on first use and the schema version check.
import { maskPassword } from '../url.js';
import pg from 'pg';

/** The schema layout this code reads and writes; a later layout migrates from the version stored in `meta`. */
export const SCHEMA_VERSION = 1;

/** What `postgres://…?schema=NAME&…` asks for, beyond what `pg` itself understands. */
export interface PostgresUrl {
  /** the connection string handed to `pg`, without this backend's own options */
  connectionString: string;
  /** the URL with its password masked, for people */
  masked: string;
  /** the Postgres schema holding the tables (default `blackboard`) */
  schema: string;
  /** how long opening a connection may take, ms (`connect_timeout`, seconds as in libpq; default 5) */
  connectTimeoutMs: number;
  /** how long one statement may run on the server, ms (`statement_timeout`, ms; default 10000) */
  statementTimeoutMs: number;
  /** connections in this process's pool (`pool_max`, default 10) */
  poolMax: number;
  /**
   * `listen_host=HOST[:PORT]`: where the commit listener connects instead (the same user, password and database),
   * straight to Postgres when the URL names a pooler in transaction mode, which does not deliver notifications
   */
  listenConnectionString?: string;
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,59}$/;
/** A host name or IPv4 address, or a bracketed IPv6 address, with an optional port. */
const LISTEN_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
/** The sslmodes pg (8.x) treats as verify-full. */
const VERIFIED_AS_FULL = new Set(['prefer', 'require', 'verify-ca']);

/** Parses a `postgres://` or `postgresql://` URL; a bad option is an error naming it (the password never shown). */
export function parsePostgresUrl(url: string): PostgresUrl {
  const masked = maskPassword(url);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`${masked} is not a valid URL; expected postgres://user:password@host:port/database?schema=NAME`);
  }
  const take = (name: string): string | undefined => {
    const value = parsed.searchParams.get(name);
    parsed.searchParams.delete(name);
    return value ?? undefined;
  };
  const schema = take('schema') ?? 'blackboard';
  if (!SCHEMA_NAME.test(schema)) {
    throw new Error(
      `schema=${schema} in ${masked} is not a valid schema name (letters, digits and _, at most 60, not starting with a digit)`,
    );
  }
  const number = (name: string, fallback: number, min: number): number => {
    const raw = take(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) throw new Error(`${name}=${raw} in ${masked} must be an integer >= ${min}`);
    return value;
  };
  const connectTimeoutMs = number('connect_timeout', 5, 1) * 1000;
  const statementTimeoutMs = number('statement_timeout', 10_000, 100);
  const poolMax = number('pool_max', 10, 1);
  const listenHost = take('listen_host');
  // pg verifies the certificate under sslmode=prefer, require and verify-ca as under verify-full, and says so in an
  // eight-line warning at every start; naming the mode it applies keeps stderr to our own lines (its libpq
  // compatibility, uselibpqcompat=true, is left as asked).
  const sslmode = parsed.searchParams.get('sslmode');
  if (sslmode !== null && VERIFIED_AS_FULL.has(sslmode) && !parsed.searchParams.has('uselibpqcompat')) {
    parsed.searchParams.set('sslmode', 'verify-full');
  }
  const connectionString = parsed.toString();
  let listenConnectionString: string | undefined;
  if (listenHost !== undefined) {
    const direct = new URL(connectionString);
    if (!LISTEN_HOST.test(listenHost)) throw new Error(`listen_host=${listenHost} in ${masked} must be HOST or HOST:PORT`);
    direct.port = ''; // without a port of its own, Postgres's default (5432), not the pooler's port of the store URL
    direct.host = listenHost;
    listenConnectionString = direct.toString();
  }
  return {
    connectionString,
    masked,
    schema,
    connectTimeoutMs,
    statementTimeoutMs,
    poolMax,
    ...(listenConnectionString ? { listenConnectionString } : {}),
  };
}

/** Fully qualified, quoted table names of one schema, and its notification channel. */
export interface Tables {
  schema: string;
  meta: string;
  records: string;
  changes: string;
  /** the `LISTEN` channel commits ring after they commit */
  channel: string;
}

export function tablesOf(schema: string): Tables {
  const q = `"${schema}"`;
  return { schema, meta: `${q}.meta`, records: `${q}.records`, changes: `${q}.changes`, channel: `blackboard.${schema}` };
}

/**
 * Creates the schema on first use. Several servers may start at once against a new database: a transaction-level
 * advisory lock (keyed by the schema name) lets one create while the others wait, then find it made. A schema made
 * by a newer version of this program is refused rather than misread.
 */
export async function ensureSchema(client: pg.ClientBase, t: Tables): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`mcp-blackboard schema ${t.schema}`]);
    const exists = await client.query<{ found: string | null }>(`SELECT to_regclass($1) AS found`, [t.meta]);
    if (exists.rows[0].found !== null) {
      const { rows } = await client.query<{ schema_version: number }>(`SELECT schema_version FROM ${t.meta} WHERE id = 1`);
      const version = rows[0]?.schema_version;
      if (version !== SCHEMA_VERSION) {
        throw new Error(
          `schema "${t.schema}" has layout version ${version ?? 'none'}, and this version of mcp-blackboard reads version ${SCHEMA_VERSION}; upgrade mcp-blackboard or use another ?schema=`,
        );
      }
    } else {
      // a schema made beforehand (by an administrator, for a role that may not create schemas) is used as it is:
      // CREATE SCHEMA IF NOT EXISTS would still ask for the database's CREATE privilege
      const made = await client.query(`SELECT 1 FROM pg_namespace WHERE nspname = $1`, [t.schema]);
      if (made.rowCount === 0) await client.query(`CREATE SCHEMA "${t.schema}"`);
      // Keys are compared byte-wise (COLLATE "C": UTF-8 byte order = code point order, as on every backend).
      // Records are the JSON text as written, never jsonb, so values come back exactly as stored.
      await client.query(`
        CREATE TABLE ${t.meta} (
          id smallint PRIMARY KEY CHECK (id = 1),
          schema_version integer NOT NULL,
          revision bigint NOT NULL,
          compacted bigint NOT NULL
        );
        CREATE TABLE ${t.records} (
          key text COLLATE "C" PRIMARY KEY,
          record text NOT NULL,
          exp double precision,
          tomb_at double precision
        );
        CREATE INDEX ON ${t.records} (exp) WHERE exp IS NOT NULL;
        CREATE INDEX ON ${t.records} (tomb_at) WHERE tomb_at IS NOT NULL;
        CREATE TABLE ${t.changes} (
          revision bigint NOT NULL,
          key text COLLATE "C" NOT NULL,
          version bigint NOT NULL,
          deleted boolean NOT NULL,
          at double precision NOT NULL,
          PRIMARY KEY (revision, key)
        );
        CREATE INDEX ON ${t.changes} (at);
        INSERT INTO ${t.meta} (id, schema_version, revision, compacted) VALUES (1, ${SCHEMA_VERSION}, 0, 0);
      `);
    }
    await preferLz4(client, t);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  }
}

/**
 * Large records are compressed with lz4 rather than Postgres's default pglz: a 140 KB record is written in two thirds
 * of the time. Only values written from then on change, and older ones stay readable, so a schema made before is
 * switched too (once: the column's setting is checked first). A server built without lz4 keeps pglz.
 */
async function preferLz4(client: pg.ClientBase, t: Tables): Promise<void> {
  const { rows } = await client.query<{ compression: string }>(
    `SELECT attcompression::text AS compression FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'record'`,
    [t.records],
  );
  if (rows[0]?.compression === 'l') return;
  await client.query('SAVEPOINT lz4');
  try {
    // Not worth a wait behind busy writers, nor a failed start: without the lock at once, or the right to alter the
    // table, the next start tries again.
    await client.query(`SET LOCAL lock_timeout = '200ms'`);
    await client.query(`ALTER TABLE ${t.records} ALTER COLUMN record SET COMPRESSION lz4`);
    await client.query('RELEASE SAVEPOINT lz4');
  } catch {
    await client.query('ROLLBACK TO SAVEPOINT lz4');
  }
}

/** The store's tables are gone from under a running server. */
export function tablesGone(t: Tables): Error {
  return new Error(`the store's tables in schema "${t.schema}" are missing or empty (dropped while the server was running?)`);
}

/**
 * Checks that the database can hold a blackboard (UTF8) and take its writes (a primary, not read-only for this role),
 * and creates or checks its schema.
 */
export async function checkDatabase(client: pg.ClientBase, t: Tables, listen?: pg.ClientConfig): Promise<void> {
  const { rows } = await client.query<{ encoding: string; standby: boolean; read_only: string }>(
    `SELECT current_setting('server_encoding') AS encoding, pg_is_in_recovery() AS standby,
       current_setting('default_transaction_read_only') AS read_only`,
  );
  const { encoding, standby, read_only: readOnly } = rows[0] ?? {};
  if (encoding !== 'UTF8' && encoding !== 'SQL_ASCII') {
    throw new Error(`the database's encoding is ${encoding}; keys and values need UTF8 (CREATE DATABASE … ENCODING 'UTF8')`);
  }
  // Every server process writes (signs of life, claims, the schema), and LISTEN does not run on a standby.
  if (standby) {
    throw new Error('this Postgres is a read-only standby (a replica in recovery); point --store at the primary (a read-write endpoint)');
  }
  if (readOnly === 'on') {
    throw new Error(
      'transactions here are read-only (default_transaction_read_only is on for this role or database); point --store at a read-write database or role',
    );
  }
  await ensureSchema(client, t);
  if (listen) await checkListenHost(listen, t);
}

/** A `listen_host` must reach the same board: otherwise waits would never hear of a commit. */
async function checkListenHost(listen: pg.ClientConfig, t: Tables): Promise<void> {
  const direct = new pg.Client(listen);
  direct.on('error', () => {});
  try {
    await direct.connect();
    await direct.query(`SELECT 1 FROM ${t.meta} WHERE id = 1`);
  } catch (error) {
    throw new Error(`listen_host: the board's listener cannot read it there: ${(error as Error).message}`);
  } finally {
    await direct.end().catch(() => {});
  }
}

/** A connection that broke under a statement (reset, terminated), as opposed to a refusal or a bad setting. */
export const isReset = (error: unknown): boolean =>
  /ECONNRESET|EPIPE|Connection terminated unexpectedly/.test(
    error instanceof Error ? `${(error as { code?: string }).code ?? ''} ${error.message}` : String(error),
  );
