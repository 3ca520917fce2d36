// The Postgres backend against a real server, below VersionedStore: the seam's promises, one by one.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBackend } from '../../src/store/postgres/backend.js';
import { parsePostgresUrl } from '../../src/store/postgres/schema.js';
import { lit } from '../../src/store/postgres/sql.js';
import { maskPassword, withoutPassword } from '../../src/store/url.js';
import type { CommitEvent, RecordWrite, StoredRecord, Writes } from '../../src/store/types.js';
import { freePort, startPostgres, type PostgresHandle } from '../services/postgres.js';

describe('postgres URL options', () => {
  it('masks the password, also in URLs that do not parse', () => {
    expect(maskPassword('postgres://bob:s3cr%40t@db.example:5432/app?schema=x')).toBe('postgres://bob:***@db.example:5432/app?schema=x');
    expect(maskPassword('postgres://bob@db/app')).toBe('postgres://bob@db/app');
    expect(maskPassword('postgres://bob:pw@[bad/app')).toBe('postgres://bob:***@[bad/app');
    // a password holding a raw "/", whether the URL then fails to parse or parses with the password's start as a port
    expect(maskPassword('postgres://app:Ab/cD9@db:5432/board')).toBe('postgres://app:***@db:5432/board');
    expect(maskPassword('postgres://app:12/cD9@db:5432/board')).toBe('postgres://app:***@db:5432/board');
    expect(withoutPassword('bad URL postgres://app:12/cD9@db/b', 'postgres://app:12/cD9@db/b')).toBe('bad URL postgres://app:***@db/b');
    // ... or a raw "#" or "?": a fragment or a query after a host taken from the user's part
    expect(maskPassword('postgres://me:1234#secret@127.0.0.1:1/db')).toBe('postgres://me:***@127.0.0.1:1/db');
    expect(maskPassword('postgres://me:abc?def@127.0.0.1:1/db')).toBe('postgres://me:***@127.0.0.1:1/db');
    expect(maskPassword('redis://:99?top#secret@127.0.0.1:1/0')).toBe('redis://:***@127.0.0.1:1/0');
    expect(withoutPassword('bad URL postgres://me:1234#secret@h/db', 'postgres://me:1234#secret@h/db')).toBe(
      'bad URL postgres://me:***@h/db',
    );
    // a URL with no password is left as it is, "@" in its query or not
    expect(maskPassword('postgres://h/db?application_name=a@b')).toBe('postgres://h/db?application_name=a@b');
    // the driver also takes a password from the query
    expect(maskPassword('postgres://bob@db/app?password=s3cret&sslmode=disable')).toBe(
      'postgres://bob@db/app?password=***&sslmode=disable',
    );
    expect(maskPassword('postgres://bob@[bad/app?sslpassword=s3cret')).toBe('postgres://bob@[bad/app?sslpassword=***');
    expect(withoutPassword('no route to postgres://bob@db/app?password=s3cr%40t (s3cr@t)', 'postgres://bob@db/app?password=s3cr%40t')).toBe(
      'no route to postgres://bob@db/app?password=*** (***)',
    );
  });

  it('takes schema, connect_timeout, statement_timeout and pool_max out of the URL and leaves the rest to pg', () => {
    const parsed = parsePostgresUrl('postgresql://u:p@h:5433/db?schema=team_a&connect_timeout=2&sslmode=disable&pool_max=3');
    expect(parsed).toMatchObject({ schema: 'team_a', connectTimeoutMs: 2000, statementTimeoutMs: 10_000, poolMax: 3 });
    expect(parsed.connectionString).toBe('postgresql://u:p@h:5433/db?sslmode=disable');
    expect(parsed.masked).toBe('postgresql://u:***@h:5433/db?schema=team_a&connect_timeout=2&sslmode=disable&pool_max=3');
    expect(parsePostgresUrl('postgres://h/db').schema).toBe('blackboard');
    // listen_host: the listener's own host, with the same credentials, database and options
    const pooled = parsePostgresUrl('postgres://u:p@pooler:6432/db?schema=s&listen_host=db.internal:5432&sslmode=disable');
    expect(pooled.connectionString).toBe('postgres://u:p@pooler:6432/db?sslmode=disable');
    expect(pooled.listenConnectionString).toBe('postgres://u:p@db.internal:5432/db?sslmode=disable');
    expect(parsePostgresUrl('postgres://u:p@h/db?listen_host=[::1]').listenConnectionString).toBe('postgres://u:p@[::1]/db');
    // without a port of its own, Postgres's default: not the pooler's port of the store URL
    expect(parsePostgresUrl('postgres://u:p@pooler:6432/db?listen_host=db.internal').listenConnectionString).toBe(
      'postgres://u:p@db.internal/db',
    );
    expect(parsePostgresUrl('postgres://u:p@h/db').listenConnectionString).toBeUndefined();
    expect(() => parsePostgresUrl('postgres://u:hunter2@h/db?listen_host=a/b')).toThrow(/listen_host=a\/b in postgres:\/\/u:\*\*\*@h/);
    // pg verifies certificates under prefer, require and verify-ca as under verify-full: that mode is named for it
    for (const mode of ['prefer', 'require', 'verify-ca']) {
      const tls = parsePostgresUrl(`postgres://h/db?sslmode=${mode}&sslrootcert=/ca.pem`);
      expect(tls.connectionString).toBe('postgres://h/db?sslmode=verify-full&sslrootcert=%2Fca.pem');
      expect(tls.masked).toContain(`sslmode=${mode}`);
    }
    for (const url of [
      'postgres://h/db?sslmode=disable',
      'postgres://h/db?sslmode=no-verify',
      'postgres://h/db?sslmode=require&uselibpqcompat=true',
    ]) {
      expect(parsePostgresUrl(url).connectionString).toBe(url);
    }
  });

  it("quotes a literal exactly as the driver's escapeLiteral does", () => {
    const texts = ['plain', "it's", 'a\\b', "'\\'", '', 'é€😀', "\\\\''", JSON.stringify({ q: "o'k", s: 'back\\slash "quoted"' })];
    for (let i = 0; i < 200; i++) texts.push(Array.from({ length: i % 40 }, (_, j) => 'ab\'\\"é \n'[(i * 7 + j * 3) % 9]).join(''));
    for (const text of texts) expect(lit(text), text).toBe(pg.escapeLiteral(text));
  });

  it('refuses a bad schema name or option, without showing the password', () => {
    expect(() => parsePostgresUrl('postgres://u:hunter2@h/db?schema=a;drop')).toThrow(/schema=a;drop .*not a valid schema name/);
    expect(() => parsePostgresUrl('postgres://u:hunter2@h/db?schema=a;drop')).not.toThrow(/hunter2/);
    expect(() => parsePostgresUrl('postgres://u:hunter2@h/db?connect_timeout=0')).toThrow(/connect_timeout=0 .*u:\*\*\*@h/);
  });
});

let server: PostgresHandle | undefined;
let baseUrl: string | undefined = process.env.BLACKBOARD_TEST_POSTGRES_URL;
let skipped: string | undefined;

beforeAll(async () => {
  if (baseUrl) return;
  const started = await startPostgres();
  if ('skipped' in started) skipped = started.skipped;
  else {
    server = started;
    baseUrl = started.url;
  }
}, 60_000);
afterAll(async () => server?.destroy());

const withSchema = (url: string, schema: string): string => `${url}${url.includes('?') ? '&' : '?'}schema=${schema}`;
const freshUrl = (): string => withSchema(baseUrl!, `t_${randomUUID().replaceAll('-', '')}`);
const opened: PostgresBackend[] = [];
async function open(url = freshUrl(), safetyPollMs = 200): Promise<PostgresBackend> {
  const backend = await PostgresBackend.open(url, { safetyPollMs });
  opened.push(backend);
  return backend;
}
afterAll(async () => {
  await Promise.allSettled(opened.map((b) => b.close()));
});

const rec = (v: StoredRecord['v'], ver: number, extra: Partial<RecordWrite> = {}): RecordWrite => ({ v, ver, at: 1000, by: 'a', ...extra });
const puts = (entries: Record<string, RecordWrite | null>, log = true): Writes =>
  new Map(Object.entries(entries).map(([key, record]) => [key, { record, log }]));
const write = (b: PostgresBackend, entries: Record<string, RecordWrite | null>, log = true) =>
  b.transaction(async () => ({ result: undefined, writes: puts(entries, log) }));

describe('postgres backend', () => {
  it('keeps values exactly as written and stamps the commit revision', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    const value = JSON.parse('{"z":1,"a":[1.5,"x"],"__proto__":{"p":true},"m":{"b":null,"a":"é\\u0000"}}');
    const first = await write(b, { k: rec(value, 1) });
    expect(first.revision).toBe(1);
    const got = await b.get('k');
    expect(JSON.stringify(got!.v)).toBe(JSON.stringify(value));
    expect(Object.keys(got!.v as object)).toEqual(['z', 'a', '__proto__', 'm']);
    expect(got).toMatchObject({ ver: 1, rev: 1, at: 1000, by: 'a' });
    const second = await write(b, { k: rec(2, 2), other: rec('o', 1) });
    expect(second.revision).toBe(2);
    expect((await b.get('other'))!.rev).toBe(2);
    expect(await b.revision()).toBe(2);
    expect(await b.get('missing')).toBeUndefined();
  });

  it('orders keys by code point, treats %, _, *, [ as ordinary characters and takes long keys', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    const keys = ['a', 'a%', 'a_b', 'aXb', 'a*', 'a[', 'B', 'é', '\u{1F600}', '\uFFFD', 'a\x1fb', 'x'.repeat(2100)];
    const entries: Record<string, RecordWrite> = {};
    for (const key of keys) entries[key] = rec(key, 1);
    await write(b, entries);
    const { rows } = await b.list({ lo: '', hi: '\u{10FFFF}', limit: 100, now: 0 });
    const codePointSorted = [...keys].sort((x, y) => {
      const a = Array.from(x).map((c) => c.codePointAt(0)!);
      const c = Array.from(y).map((ch) => ch.codePointAt(0)!);
      for (let i = 0; i < Math.min(a.length, c.length); i++) if (a[i] !== c[i]) return a[i] - c[i];
      return a.length - c.length;
    });
    expect(rows.map(([k]) => k)).toEqual(codePointSorted);
    const prefix = await b.list({ lo: 'a_', hi: 'a`', limit: 100, now: 0 });
    expect(prefix.rows.map(([k]) => k)).toEqual(['a_b']);
    expect((await b.get('x'.repeat(2100)))!.v).toBe('x'.repeat(2100));
  });

  it('lists live records of a range after a key, up to a limit, with the revision', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    await write(b, {
      'r/1': rec(1, 1),
      'r/2': rec(2, 1, { del: 1, v: null }),
      'r/3': rec(3, 1, { exp: 5000 }),
      'r/4': rec(4, 1, { exp: 9000 }),
      'r/5': rec(5, 1),
      's/1': rec(6, 1),
    });
    const all = await b.list({ lo: 'r/', hi: 'r0', limit: 10, now: 5000 });
    expect(all.rows.map(([k]) => k)).toEqual(['r/1', 'r/4', 'r/5']);
    expect(all.revision).toBe(1);
    const page = await b.list({ lo: 'r/', hi: 'r0', after: 'r/1', limit: 1, now: 0 });
    expect(page.rows.map(([k]) => k)).toEqual(['r/3']);
    expect((await b.list({ lo: 'q', hi: 'r', limit: 5, now: 0 })).rows).toEqual([]);
    // get returns tombstones and expired records; the caller decides
    expect(await b.get('r/2')).toMatchObject({ del: 1, v: null });
    expect(await b.get('r/3')).toMatchObject({ exp: 5000 });
  });

  it('prepares plain reads once per connection, and reads unprepared from then on when a server refuses them', async ({ skip }) => {
    if (skipped) skip(skipped);
    // One connection per store, so that what the test runs on it is what the store's reads run on.
    const url = `${freshUrl()}&pool_max=1`;
    const b = await open(url);
    const on = (store: PostgresBackend) => (store as unknown as { db: { pool: pg.Pool } }).db.pool;
    const prepared = async (store: PostgresBackend) =>
      (await on(store).query<{ name: string }>('SELECT name FROM pg_prepared_statements ORDER BY name')).rows.map((r) => r.name);
    await write(b, { 'r/1': rec(1, 1), 'r/2': rec(2, 1) });
    const reads = async (store: PostgresBackend) => {
      expect((await store.get('r/1'))?.v).toBe(1);
      expect((await store.list({ lo: 'r/', hi: 'r0', limit: 10, now: 0 })).rows.map(([k]) => k)).toEqual(['r/1', 'r/2']);
      expect(await store.revision()).toBe(1);
    };
    await reads(b);
    await reads(b);
    // each named by its text's hash: a name means one statement (its schema's) on any connection
    const names = await prepared(b);
    expect(names).toHaveLength(3);
    for (const name of names) expect(name).toMatch(/^mcp_blackboard_[0-9a-f]{40}$/);
    // A reset drops them while the driver still takes them for prepared (a pooler's other connection would not have them).
    await on(b).query('DEALLOCATE ALL');
    await reads(b);
    await reads(b);
    expect(await prepared(b)).toEqual([]);
    // A connection that has one of the names already (a pooler's connection another client prepared it on).
    const c = await open(url);
    await on(c).query(`PREPARE ${names[0]} AS SELECT 1`);
    await reads(c);
    await reads(c);
    // (the connection that refused was given up, as after any error)
    expect(await prepared(c)).toEqual([]);
  });
  it('sets its timeouts inside each transaction, not at connect (poolers refuse startup parameters): a lock wait ends by them', async ({
    skip,
  }) => {
    if (skipped) skip(skipped);
    const url = `${freshUrl()}&statement_timeout=700`;
    const seen: Array<Record<string, string>> = [];
    const b = await PostgresBackend.open(url, {
      safetyPollMs: 200,
      failPoint: async (point, client) => {
        if (point !== 'commit') return;
        const { rows } = await client.query<{ name: string; setting: string }>(
          `SELECT name, setting FROM pg_settings WHERE name IN ('statement_timeout', 'idle_in_transaction_session_timeout') ORDER BY name`,
        );
        seen.push(Object.fromEntries(rows.map((r) => [r.name, r.setting])));
      },
    });
    opened.push(b);
    await write(b, { k: rec(1, 1) });
    expect(seen).toEqual([{ idle_in_transaction_session_timeout: '5700', statement_timeout: '700' }]);
    // outside the transaction, the session has the server's defaults (nothing was set at connect)
    const session = await (b as unknown as { db: { pool: pg.Pool } }).db.pool.query<{ statement_timeout: string }>(
      'SHOW statement_timeout',
    );
    expect(session.rows[0].statement_timeout).toBe('0');
    // Another session holds the store's lock: the transaction's wait for it ends by the server's timeout (700 ms), well
    // before the client's own (2.7 s), and changes nothing.
    const holder = new pg.Client({ connectionString: baseUrl });
    await holder.connect();
    const schema = new URL(url).searchParams.get('schema')!;
    await holder.query(`BEGIN; SELECT 1 FROM "${schema}".meta WHERE id = 1 FOR UPDATE`);
    const started = Date.now();
    await expect(write(b, { k: rec(2, 2) })).rejects.toThrow(/statement timeout/);
    expect(Date.now() - started).toBeLessThan(2500);
    await holder.query('ROLLBACK');
    await holder.end();
    expect((await b.get('k'))?.v).toBe(1);
  });

  it('refuses to open when listen_host does not reach the same board (its waits would never hear a commit)', async ({ skip }) => {
    if (skipped) skip(skipped);
    const other = await startPostgres({ maxConnections: 20 });
    if ('skipped' in other) return skip(other.skipped);
    try {
      await expect(PostgresBackend.open(`${freshUrl()}&listen_host=127.0.0.1:${other.port}`, { safetyPollMs: 200 })).rejects.toThrow(
        /listen_host: the board's listener cannot read it there: relation ".*meta" does not exist/,
      );
      // one that names the same Postgres is checked and taken
      const b = await PostgresBackend.open(`${freshUrl()}&listen_host=127.0.0.1:${new URL(baseUrl!).port}`, { safetyPollMs: 200 });
      opened.push(b);
      await write(b, { k: rec(1, 1) });
    } finally {
      await other.destroy();
    }
  }, 60_000);

  it('applies all writes or none, bumps only when something is written, and logs what asks to be logged', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    await expect(
      b.transaction(async () => {
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    const empty = await b.transaction(async (_tx, ctx) => ({ result: ctx.revision, writes: new Map() }));
    expect(empty).toEqual({ result: 0, revision: 0 });
    await write(b, { a: rec(1, 1), b: rec(1, 1) });
    await write(b, { a: rec(null, 1, { del: 1 }), hidden: rec(1, 1) }, false);
    await b.transaction(async () => ({
      result: null,
      writes: new Map([
        ['a', { record: rec(null, 2, { del: 1 }), log: true }],
        ['b', { record: null, log: true }],
      ]),
    }));
    expect(await b.get('b')).toBeUndefined();
    const log = await b.changes({ after: 0, lo: '', hi: '\u{10FFFF}', limit: 10 });
    expect(log).toEqual({
      changes: [
        { revision: 1, key: 'a', version: 1, deleted: false },
        { revision: 1, key: 'b', version: 1, deleted: false },
        { revision: 3, key: 'a', version: 2, deleted: true },
      ],
      revision: 3,
      compacted: 0,
    });
    expect((await b.changes({ after: 1, lo: 'a', hi: 'b', limit: 10 })).changes).toEqual([
      { revision: 3, key: 'a', version: 2, deleted: true },
    ]);
    expect((await b.changes({ after: 0, lo: '', hi: 'z', limit: 1 })).changes).toHaveLength(1);
  });

  it('gives the transaction the database clock, the locked revision and the prefetched keys', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    await write(b, { p: rec('pre', 1), q: rec('other', 1) });
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    const { rows } = await client.query<{ now: number }>('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now');
    await client.end();
    const seen = await b.transaction(
      async (tx, ctx) => ({
        result: {
          ctx,
          p: await tx.get('p'),
          q: await tx.get('q'),
          none: await tx.get('none'),
          list: await tx.list({ lo: '', hi: 'z', limit: 9, now: 0 }),
        },
        writes: new Map(),
      }),
      ['p', 'none', 'p'],
    );
    expect(seen.result.ctx.revision).toBe(1);
    expect(Math.abs(seen.result.ctx.now - Number(rows[0].now))).toBeLessThan(2000);
    expect(Math.abs(b.now() - seen.result.ctx.now)).toBeLessThan(2000);
    expect(seen.result.p!.v).toBe('pre');
    expect(seen.result.q!.v).toBe('other');
    expect(seen.result.none).toBeUndefined();
    expect(seen.result.list.map(([k]) => k)).toEqual(['p', 'q']);
  });

  it('finds records due for sweeping and prunes the change log, raising compacted', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    await write(b, {
      e1: rec(1, 1, { exp: 100 }),
      e2: rec(1, 1, { exp: 300 }),
      t1: rec(null, 1, { del: 1, at: 50 }),
      t2: rec(null, 1, { del: 1, at: 400 }),
      live: rec(1, 1),
    });
    expect((await b.due({ now: 200, tombstonesBefore: 60, limit: 10 })).sort()).toEqual(['e1', 't1']);
    expect(await b.due({ now: 1000, tombstonesBefore: 1000, limit: 2 })).toHaveLength(2);
    await write(b, { live: rec(2, 2) });
    const now = b.now() + 5000;
    expect(await b.pruneChanges(now, 3)).toBe(3);
    let log = await b.changes({ after: 0, lo: '', hi: 'z', limit: 10 });
    expect(log.compacted).toBe(1);
    expect(log.changes.length).toBe(3);
    expect(await b.pruneChanges(now, 100)).toBe(3);
    log = await b.changes({ after: 0, lo: '', hi: 'z', limit: 10 });
    expect(log).toEqual({ changes: [], revision: 2, compacted: 2 });
    expect(await b.pruneChanges(0, 100)).toBe(0);
  });

  it('one increment per transaction from two stores sharing the schema: none lost', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const [a, b] = [await open(url), await open(url)];
    const bump = (store: PostgresBackend) =>
      store.transaction(
        async (tx, ctx) => {
          const current = await tx.get('n');
          const n = ((current?.v as number) ?? 0) + 1;
          return { result: n, writes: puts({ n: { v: n, ver: (current?.ver ?? 0) + 1, at: ctx.now, by: 'x' } }) };
        },
        ['n'],
      );
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => bump(i % 2 ? a : b)));
    expect(new Set(results.map((r) => r.result)).size).toBe(60);
    expect((await a.get('n'))!.v).toBe(60);
    expect(await b.revision()).toBe(60);
  });

  it('tells a listener about another store’s commits with their keys, and reports a gap first', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const [a, b] = [await open(url), await open(url)];
    const events: CommitEvent[] = [];
    const stop = b.onForeignCommit((event) => events.push(event));
    await until(() => events.some((e) => 'gap' in e));
    const started = Date.now();
    await write(a, { w: rec(1, 1), v: rec(2, 1) });
    await until(() => events.some((e) => 'keys' in e));
    expect(Date.now() - started).toBeLessThan(1000);
    expect(events.find((e) => 'keys' in e)).toEqual({ revision: 1, keys: ['w', 'v'] });
    // b's own commits are not reported back to it
    await write(b, { own: rec(1, 1) });
    await write(a, { after: rec(1, 1) }, false);
    await until(() => events.some((e) => 'keys' in e && e.keys.includes('after')));
    expect(events.some((e) => 'keys' in e && e.keys.includes('own'))).toBe(false);
    stop();
  });

  it('reports a commit whose keys do not fit in a doorbell as a gap', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const [a, b] = [await open(url), await open(url)];
    const events: CommitEvent[] = [];
    b.onForeignCommit((event) => events.push(event));
    await until(() => events.some((e) => 'gap' in e));
    events.length = 0;
    const big: Record<string, RecordWrite> = {};
    for (let i = 0; i < 5; i++) big[`${i}`.padEnd(2000, 'k')] = rec(i, 1);
    await write(a, big);
    await until(() => events.length > 0);
    expect(events[0]).toEqual({ gap: true });
  });

  it('reports commits whose doorbell never rang: logged ones with their keys, silent ones as a gap', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const b = await open(url, 100);
    const events: CommitEvent[] = [];
    b.onForeignCommit((event) => events.push(event));
    await until(() => events.some((e) => 'gap' in e));
    events.length = 0;
    // A writer killed between its commit and its doorbell: commit by hand, without pg_notify.
    const schema = parsePostgresUrl(url).schema;
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    await client.query(`BEGIN; UPDATE "${schema}".meta SET revision = revision + 1;
      INSERT INTO "${schema}".changes SELECT revision, 'silent-logged', 1, false, 0 FROM "${schema}".meta; COMMIT`);
    await until(() => events.length > 0);
    expect(events).toEqual([{ revision: 1, keys: ['silent-logged'] }]);
    await client.query(`UPDATE "${schema}".meta SET revision = revision + 1`);
    await until(() => events.length > 1);
    expect(events[1]).toEqual({ gap: true });
    await client.end();
  });

  it('refreshes the planner statistics after a bulk commit, so listings stay on the index', async ({ skip }) => {
    if (skipped) skip(skipped);
    const schema = `t_${randomUUID().replaceAll('-', '')}`;
    const b = await open(withSchema(baseUrl!, schema));
    const entries: Record<string, RecordWrite> = {};
    for (let i = 0; i < 2000; i++) entries[`bulk/${String(i).padStart(5, '0')}`] = rec(i, 1);
    await write(b, entries, false);
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    try {
      // Postgres's own autoanalyze comes up to a minute later; the backend asks for it at once.
      let estimate = 0;
      for (let i = 0; i < 50 && estimate < 2000; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const { rows } = await client.query<{ n: number }>(`SELECT reltuples::int AS n FROM pg_class WHERE oid = to_regclass($1)`, [
          `"${schema}".records`,
        ]);
        estimate = rows[0]?.n ?? 0;
      }
      expect(estimate).toBeGreaterThanOrEqual(2000);
    } finally {
      await client.end();
    }
  });

  it('creates the schema once when several stores start at the same moment', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const stores = await Promise.all(Array.from({ length: 6 }, () => open(url)));
    await Promise.all(stores.map((s, i) => write(s, { [`k${i}`]: rec(i, 1) })));
    expect(await stores[0].revision()).toBe(6);
  });

  it('refuses a schema laid out by a newer version', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    await (await open(url)).close();
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    await client.query(`UPDATE "${parsePostgresUrl(url).schema}".meta SET schema_version = 99`);
    await client.end();
    await expect(PostgresBackend.open(url)).rejects.toThrow(/layout version 99.*reads version 1/);
  });

  it('fails to open an unreachable server quickly, naming the cause', async () => {
    const port = await freePort();
    const started = Date.now();
    const failure = PostgresBackend.open(`postgres://u:hunter2@127.0.0.1:${port}/db`);
    await expect(failure).rejects.toThrow(/ECONNREFUSED/);
    await expect(failure).rejects.not.toThrow(/hunter2/);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('postgres range reads in one transaction', () => {
  it('reads asked for together give what each gives alone, in one round trip', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    const keys = ["a'quote", 'a\\back', 'a$1 dollar', 'aé', 'b1', 'b2', 'b3', 'c-expired', 'c-gone', 'c-live'];
    await write(b, Object.fromEntries(keys.map((k, i) => [k, rec({ k, i }, 1, k === 'c-expired' ? { exp: 1 } : {})])));
    await write(b, { 'c-gone': { v: null, ver: 1, at: 1000, by: 'a', del: 1 } });
    const now = Date.now();
    const queries = [
      { lo: 'a', hi: 'b', limit: 100, now },
      { lo: 'b', hi: 'c', limit: 2, now },
      { lo: 'b', hi: 'c', after: 'b1', limit: 100, now },
      { lo: 'c', hi: 'd', limit: 100, now },
      { lo: 'x', hi: 'y', limit: 100, now },
    ];
    const alone = await b.transaction(async (tx) => {
      const out = [];
      for (const q of queries) out.push(await tx.list(q));
      return { result: out, writes: new Map() };
    });
    const sent: string[] = [];
    const together = await b.transaction(async (tx) => {
      const spy = (b as unknown as { db: { query: (...a: unknown[]) => unknown } }).db;
      const query = spy.query.bind(spy);
      spy.query = (...a: unknown[]) => {
        sent.push(String(a[2]));
        return query(...a);
      };
      try {
        return { result: await Promise.all(queries.map((q) => tx.list(q))), writes: new Map() };
      } finally {
        spy.query = query;
      }
    });
    expect(together.result).toEqual(alone.result);
    expect(alone.result.map((rows) => rows.map(([k]) => k))).toEqual([
      ['a$1 dollar', "a'quote", 'a\\back', 'aé'],
      ['b1', 'b2'],
      ['b2', 'b3'],
      ['c-live'],
      [],
    ]);
    expect(sent).toHaveLength(1);
  });
});

describe('postgres: large records read again', () => {
  /** Texts of one length (about 40 KB stored), different for each `i`. */
  const big = (i: number): string => `${String(i).padStart(6, '0')}${'é—x'.repeat(6_000)}`;
  const readIn = async (b: PostgresBackend, key: string) =>
    (
      await b.transaction(async (tx) => {
        const got = await tx.get(key);
        const listed = await tx.list({ lo: key, hi: `${key}\u0001`, limit: 10, now: Date.now() });
        return { result: { got: got?.v, listed: listed.map(([, r]) => r.v), frozen: Object.isFrozen(got) }, writes: new Map() };
      })
    ).result;
  /** Counts the statements that read records whole (the first reads of a transaction take large ones by size). */
  const wholeReads = (b: PostgresBackend): { count: number } => {
    const db = (b as unknown as { db: { query: (...a: unknown[]) => unknown } }).db;
    const query = db.query.bind(db);
    const counter = { count: 0 };
    db.query = (...a: unknown[]) => {
      if (/SELECT key, record FROM/.test(String(a[2]))) counter.count++;
      return query(...a);
    };
    return counter;
  };

  /**
   * Counts the texts of large records that `b`'s plain reads bring back (a listing's fetch of its large rows
   * included); `before(statement)` runs ahead of each read.
   */
  const largeTexts = (b: PostgresBackend, before?: (statement: string) => Promise<unknown>): { count: number } => {
    const db = (b as unknown as { db: { read: (...x: unknown[]) => Promise<{ rows: Array<{ record?: string | null }> }> } }).db;
    const read = db.read.bind(db);
    const texts = { count: 0 };
    db.read = async (...args: unknown[]) => {
      await before?.(String(args[0]));
      const result = await read(...args);
      texts.count += result.rows.filter((row) => (row.record?.length ?? 0) > 16_000).length;
      return result;
    };
    return texts;
  };

  it('a record another process rewrote at the same size is read as it is now; one this process holds is not read whole', async ({
    skip,
  }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const [a, b] = [await open(url), await open(url)];
    const whole = wholeReads(a);
    for (let i = 0; i < 8; i++) {
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      await write(writer, { doc: rec(big(i), i + 1) });
      expect(await readIn(writer, 'doc')).toEqual({ got: big(i), listed: [big(i)], frozen: true });
      expect(await readIn(reader, 'doc')).toEqual({ got: big(i), listed: [big(i)], frozen: true });
    }
    // a read whole once after each of b's four writes (the get and the listing of that transaction take it from memory)
    expect(whole.count).toBe(4);
    expect(await readIn(a, 'doc')).toEqual({ got: big(7), listed: [big(7)], frozen: true });
    expect(whole.count).toBe(4);
  });

  it("a written value stays the caller's: not frozen, and changing it afterwards changes nothing stored", async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    const mine = { list: Array.from({ length: 80 }, (_, i) => ({ id: i, text: 'x'.repeat(300) })) };
    await write(b, { doc: rec(mine, 1) });
    expect(Object.isFrozen(mine) || Object.isFrozen(mine.list[0])).toBe(false);
    mine.list[0].text = 'changed';
    mine.list.push({ id: 99, text: 'later' });
    const read = await readIn(b, 'doc');
    expect(read.got).toEqual({ list: Array.from({ length: 80 }, (_, i) => ({ id: i, text: 'x'.repeat(300) })) });
    expect(read.frozen).toBe(true); // the store's own copy, held
  });

  it('a large row written with its revision last (an older version) is read whole every time', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const a = await open(url);
    await write(a, { doc: rec(big(1), 1) });
    const whole = wholeReads(a);
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    const { schema } = parsePostgresUrl(url);
    await client.query(`UPDATE "${schema}".meta SET revision = 2`);
    const text = JSON.stringify({ v: big(2), ver: 2, at: 1000, by: 'old', rev: 2 });
    await client.query(`UPDATE "${schema}".records SET record = $1 WHERE key = 'doc'`, [text]);
    await client.end();
    for (let i = 1; i <= 3; i++) {
      expect(await readIn(a, 'doc')).toMatchObject({ got: big(2), listed: [big(2)] });
      expect(whole.count).toBe(2 * i); // the get's and the listing's, each time
    }
  });

  it('a plain get of a key this process holds leaves the text in the database unless the row changed', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const [a, b] = [await open(url), await open(url)];
    const texts = largeTexts(a);
    await write(a, { doc: rec(big(1), 1) });
    const got = await a.get('doc');
    expect(got?.v).toBe(big(1));
    expect(Object.isFrozen(got) && texts.count).toBe(0);
    // rewritten by another store at the same size: brought back once, then held again
    await write(b, { doc: rec(big(2), 2) });
    expect((await a.get('doc'))?.v).toBe(big(2));
    expect((await a.get('doc'))?.v).toBe(big(2));
    expect(texts.count).toBe(1);
    await write(b, { doc: rec('small', 3) });
    expect((await a.get('doc'))?.v).toBe('small');
    await write(b, { doc: null });
    expect(await a.get('doc')).toBeUndefined();
  });

  it('a plain listing takes the large records this process holds from memory, fetches the others, and lists again when one changed meanwhile', async ({
    skip,
  }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const [a, b] = [await open(url), await open(url)];
    // The writes in `meanwhile` go in one each, just before a's next fetches of the large rows a listing saw.
    const meanwhile: Array<() => Promise<unknown>> = [];
    const texts = largeTexts(a, async (statement) => /= ANY\(\$1\)/.test(statement) && (await meanwhile.shift()?.()));
    const list = async () => {
      const { rows, revision } = await a.list({ lo: 'doc', hi: 'doc\uffff', limit: 10, now: Date.now() });
      // the large ones are the store's own copies, held
      const frozen = rows.every(([key, r]) => key === 'doc3' || Object.isFrozen(r));
      return { values: rows.map(([key, r]) => [key, r.v]), revision, frozen };
    };
    const listing = (doc1: string, doc2: string, revision: number) => ({
      values: [
        ['doc1', doc1],
        ['doc2', doc2],
        ['doc3', 'small'],
      ],
      revision,
      frozen: true,
    });
    const { revision: r1 } = await write(a, { doc1: rec(big(1), 1), doc2: rec(big(2), 1), doc3: rec('small', 1) });
    // written by this process: held, nothing large comes back
    expect(await list()).toEqual(listing(big(1), big(2), r1));
    expect(texts.count).toBe(0);
    // rewritten by another process at the same size: fetched once, then held
    const { revision: r2 } = await write(b, { doc2: rec(big(3), 2) });
    expect(await list()).toEqual(listing(big(1), big(3), r2));
    expect(await list()).toEqual(listing(big(1), big(3), r2));
    expect(texts.count).toBe(1);
    // rewritten, and again between the listing and its fetch: listed again, as one snapshot
    await write(b, { doc1: rec(big(4), 2) });
    let last = 0;
    meanwhile.push(async () => (last = (await write(b, { doc1: rec(big(5), 3) })).revision));
    expect(await list()).toEqual(listing(big(5), big(3), last));
    expect(texts.count).toBe(3);
    // changed before each of two fetches: the third listing reads every row whole
    await write(b, { doc1: rec(big(6), 4), doc2: rec(big(7), 3) });
    meanwhile.push(
      async () => write(b, { doc2: rec(big(8), 4) }),
      async () => (last = (await write(b, { doc2: rec(big(9), 5) })).revision),
    );
    expect(await list()).toEqual(listing(big(6), big(9), last));
    expect(meanwhile).toHaveLength(0);
    expect(texts.count).toBe(9); // two fetches of both, then both in the listing itself
    // held since: a get leaves the text in the database
    expect((await a.get('doc2'))?.v).toBe(big(9));
    expect(texts.count).toBe(9);
  });

  it('tables made anew under the same schema (revisions starting over) are never read from memory, by a get either', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const a = await open(url);
    await write(a, { doc: rec(big(1), 1) });
    expect(await readIn(a, 'doc')).toMatchObject({ got: big(1) });
    const client = new pg.Client({ connectionString: baseUrl });
    await client.connect();
    await client.query(`DROP SCHEMA "${parsePostgresUrl(url).schema}" CASCADE`);
    await client.end();
    // Another store makes the schema again and writes the same key at the same revision, size and time.
    const c = await open(url);
    expect((await write(c, { doc: rec(big(2), 1) })).revision).toBe(1);
    // a plain get first: `a` has run no transaction since, so only the tables' identity tells the rows apart
    expect((await a.get('doc'))?.v).toBe(big(2));
    expect(await readIn(a, 'doc')).toMatchObject({ got: big(2), listed: [big(2)] });
  });
});

describe('postgres: large records in the commit', () => {
  /** About 70 KB of text with quotes, backslashes, `$1` and non-ASCII: past the size sent as a parameter. */
  const large = (i: number): string => `${i}:${"it's \\ $1 é—\u0000 ".repeat(5_000)}`;

  it('large records go as parameters of the statement, small ones and removals beside them, all read back as written', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const b = await open(url);
    await write(b, { gone: rec('soon', 1) });
    const db = (b as unknown as { db: { query: (...a: unknown[]) => unknown } }).db;
    const query = db.query.bind(db);
    const sent: Array<{ text: string; values?: unknown[] }> = [];
    db.query = (...a: unknown[]) => {
      sent.push({ text: String(a[2]), values: a[3] as unknown[] | undefined });
      return query(...a);
    };
    const value = { text: large(1), list: [large(2)] };
    const { revision } = await write(b, { big: rec(value, 1), also: rec(large(3), 1), small: rec("o'k", 1), gone: null });
    const statement = sent.find((s) => /^WITH bump/.test(s.text))!;
    expect(statement.values).toHaveLength(2);
    expect(statement.text).not.toContain(large(3).slice(0, 200));
    expect(sent.at(-1)!.text).toBe('COMMIT');
    // Another process reads them from the table, not from what this one holds.
    const c = await open(url);
    expect(await c.get('big')).toEqual({ v: value, ver: 1, at: 1000, by: 'a', rev: revision });
    expect((await c.get('also'))!.v).toBe(large(3));
    expect((await c.get('small'))!.v).toBe("o'k");
    expect(await c.get('gone')).toBeUndefined();
    const { changes } = await c.changes({ after: 1, lo: '', hi: '\uffff', limit: 10 });
    expect(changes.map((row) => row.key).sort()).toEqual(['also', 'big', 'small']);
    // A record just under the size goes quoted into the statement, with its COMMIT.
    sent.length = 0;
    await write(b, { big: rec('x'.repeat(40_000), 2) });
    expect(sent.some((s) => s.text === 'COMMIT')).toBe(false);
    expect((await c.get('big'))!.v).toBe('x'.repeat(40_000));
  });

  it('records are compressed with lz4 where the server has it, also in a schema made before (its records still read)', async ({ skip }) => {
    if (skipped) skip(skipped);
    const url = freshUrl();
    const { schema } = parsePostgresUrl(url);
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    try {
      const compression = async () =>
        (
          await admin.query(`SELECT attcompression::text AS c FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'record'`, [
            `"${schema}".records`,
          ])
        ).rows[0].c;
      const hasLz4 = (await admin.query(`SELECT 'lz4' = ANY(enumvals) AS yes FROM pg_settings WHERE name = 'default_toast_compression'`))
        .rows[0].yes;
      const a = await open(url);
      expect(await compression()).toBe(hasLz4 ? 'l' : '');
      if (!hasLz4) return;
      // A schema made before: its column on the default (pglz), a large record written with it.
      await admin.query(`ALTER TABLE "${schema}".records ALTER COLUMN record SET COMPRESSION default`);
      await write(a, { old: rec(large(1), 1) });
      await a.close();
      const b = await open(url);
      expect(await compression()).toBe('l');
      await write(b, { fresh: rec(large(2), 1) });
      const c = await open(url);
      expect((await c.get('old'))!.v).toBe(large(1));
      expect((await c.get('fresh'))!.v).toBe(large(2));
      const methods = await admin.query(
        `SELECT key, pg_column_compression(record) AS m FROM "${schema}".records WHERE key IN ('old', 'fresh')`,
      );
      expect(Object.fromEntries(methods.rows.map((r) => [r.key, r.m]))).toEqual({ old: 'pglz', fresh: 'lz4' });
      // A store busy with a long transaction: the switch does not wait for it, the start goes on, the next start switches.
      await admin.query(`ALTER TABLE "${schema}".records ALTER COLUMN record SET COMPRESSION default`);
      const busy = new pg.Client({ connectionString: baseUrl });
      await busy.connect();
      try {
        await busy.query(`BEGIN; SELECT count(*) FROM "${schema}".records`);
        const started = Date.now();
        const d = await open(url);
        expect(Date.now() - started).toBeLessThan(3000);
        expect(await compression()).toBe('');
        expect((await d.get('old'))!.v).toBe(large(1));
      } finally {
        await busy.query('ROLLBACK');
        await busy.end();
      }
      await open(url);
      expect(await compression()).toBe('l');
    } finally {
      await admin.end();
    }
  });
});

describe('postgres: key ranges fetched with BEGIN', () => {
  /** Lists `ranges` from their start inside one transaction that fetched them first; counts the statements sent after BEGIN. */
  async function listIn(b: PostgresBackend, ranges: Array<{ lo: string; hi: string; after?: string; limit?: number }>, now = Date.now()) {
    const db = (b as unknown as { db: { query: (...a: unknown[]) => unknown } }).db;
    const query = db.query.bind(db);
    const sent: string[] = [];
    db.query = (...a: unknown[]) => {
      sent.push(String(a[2]));
      return query(...a);
    };
    try {
      const { result } = await b.transaction(
        async (tx) => ({
          result: await Promise.all(ranges.map((r) => tx.list({ lo: r.lo, hi: r.hi, after: r.after, limit: r.limit ?? 1000, now }))),
          writes: new Map(),
        }),
        [],
        ranges.map(({ lo, hi }) => ({ lo, hi })),
      );
      return { lists: result.map((rows) => rows.map(([key, record]) => [key, record.v])), after: sent.slice(1, -1) };
    } finally {
      db.query = query;
    }
  }

  it('are listed without another round trip: live records only, at the clock of the list, as many as asked for', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    const now = Date.now();
    await write(b, {
      'a/1': rec(1, 1),
      'a/2': rec(2, 1, { exp: now + 500 }),
      'a/3': rec(3, 1, { del: 1 }),
      'a/4': rec(4, 1),
      'b/1': rec('b', 1),
      'c/1': rec('c', 1),
    });
    const got = await listIn(b, [
      { lo: 'a/', hi: 'a0' },
      { lo: 'b/', hi: 'b0' },
    ]);
    expect(got.lists).toEqual([
      [
        ['a/1', 1],
        ['a/2', 2],
        ['a/4', 4],
      ],
      [['b/1', 'b']],
    ]);
    expect(got.after).toEqual([]); // nothing read after BEGIN
    // at a later clock the expiring record is gone; a limit is a limit
    expect((await listIn(b, [{ lo: 'a/', hi: 'a0' }], now + 1000)).lists).toEqual([
      [
        ['a/1', 1],
        ['a/4', 4],
      ],
    ]);
    expect((await listIn(b, [{ lo: 'a/', hi: 'a0', limit: 1 }])).lists).toEqual([[['a/1', 1]]]);
    // read from a key onwards: from the table
    const after = await listIn(b, [{ lo: 'a/', hi: 'a0', after: 'a/1' }]);
    expect(after.lists).toEqual([
      [
        ['a/2', 2],
        ['a/4', 4],
      ],
    ]);
    expect(after.after).toHaveLength(1);
  });

  it('a range of 1000 rows or more is read from the table page by page, nothing left out', async ({ skip }) => {
    if (skipped) skip(skipped);
    const b = await open();
    const many = Object.fromEntries(Array.from({ length: 1005 }, (_, i) => [`m/${String(i).padStart(4, '0')}`, rec(i, 1)]));
    await write(b, many);
    const got = await listIn(b, [{ lo: 'm/', hi: 'm0' }]);
    expect(got.lists[0]).toHaveLength(1000);
    expect(got.after).toHaveLength(1); // the first page, from the table
    expect(got.lists[0].at(-1)).toEqual(['m/0999', 999]);
  });
});
