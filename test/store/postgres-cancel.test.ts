// A plain Postgres read stuck behind a lock (an operator's ALTER TABLE or VACUUM FULL holds an ACCESS EXCLUSIVE lock on
// the records) fails within the call's time, and is cancelled on the server too: no statement of ours is left waiting
// for the lock, each holding a connection slot, after the read has given up; also through PgBouncer in transaction
// mode, which passes the cancel request on. Once the lock is gone, reads work again. The commit listener's polls of
// the change log, stuck the same way, are cancelled too, so they do not pile up while the lock is held, and so is a
// write given up on at the call's deadline, which would otherwise hold the store's lock. Through a server, such a
// state_get is STORE_UNAVAILABLE with "nothing was changed".
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBackend } from '../../src/store/postgres/backend.js';
import { readLog } from '../../src/store/postgres/change-log.js';
import { CommitListener } from '../../src/store/postgres/listener.js';
import { parsePostgresUrl, tablesOf } from '../../src/store/postgres/schema.js';
import { sleep, spawnAgent } from '../helpers.js';
import { startPgBouncer, type PgBouncerHandle } from '../services/pgbouncer.js';
import { testPostgres, withFreshSchema } from '../services/postgres.js';

let pgUrl: string | undefined;
let release: (() => Promise<void>) | undefined;
let skipped: string | undefined;
let bouncer: PgBouncerHandle | undefined;
let noBouncer: string | undefined;

beforeAll(async () => {
  const found = await testPostgres();
  if ('skipped' in found) skipped = found.skipped;
  else {
    ({ url: pgUrl, release } = found);
    const started = await startPgBouncer(found.url, 3);
    if ('skipped' in started) noBouncer = started.skipped;
    else bouncer = started;
  }
}, 60_000);
afterAll(async () => {
  await bouncer?.stop();
  await release?.();
});

// statement_timeout 1 s: the client gives up on a plain read 2 s after that
const STATEMENT_TIMEOUT_MS = 1000;
const GIVES_UP_MS = STATEMENT_TIMEOUT_MS + 2000;
const shortTimeout = (url: string) => `${withFreshSchema(url)}&statement_timeout=${STATEMENT_TIMEOUT_MS}`;

/**
 * A connection straight to Postgres, and how many statements on the server read `schema` and wait for a lock, counted
 * on a connection of its own (a transaction sees the server's activity as it was at its first look).
 */
async function operatorOf(schema: string) {
  const connectionString = parsePostgresUrl(pgUrl!).connectionString;
  const operator = new pg.Client({ connectionString });
  const monitor = new pg.Client({ connectionString });
  await operator.connect();
  await monitor.connect();
  return Object.assign(operator, {
    waiting: async (): Promise<number> =>
      Number(
        (
          await monitor.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`, [
            schema,
          ])
        ).rows[0].n,
      ),
    close: async () => {
      await operator.query('ROLLBACK').catch(() => {});
      await operator.end();
      await monitor.end();
    },
  });
}

/** Reads through `url` (to this Postgres, maybe through a pooler) while an operator holds a lock on the records. */
async function readBehindLock(url: string): Promise<void> {
  const { schema } = parsePostgresUrl(url);
  const backend = await PostgresBackend.open(url);
  const t = tablesOf(schema);
  const operator = await operatorOf(schema);
  const waiting = operator.waiting;
  try {
    expect(await backend.get('k')).toBeUndefined();
    await operator.query('BEGIN');
    await operator.query(`LOCK TABLE ${t.records} IN ACCESS EXCLUSIVE MODE`);
    const started = Date.now();
    const read = backend.get('k').then(
      () => 'answered',
      (error: Error) => error.message,
    );
    await sleep(1000);
    expect(await waiting(), 'the read waits for the lock on the server').toBeGreaterThan(0);
    expect(await read).toMatch(/timeout/i);
    // once, not again on a fresh connection (before: twice as long, the second read stuck behind the same lock)
    expect(Date.now() - started, '2 s after statement_timeout').toBeLessThan(GIVES_UP_MS + 1500);
    // cancelled on the server: nothing of ours is left waiting for the lock
    await sleep(300);
    expect(await waiting()).toBe(0);
    await operator.query('ROLLBACK');
    expect(await backend.get('k')).toBeUndefined();
  } finally {
    await operator.close();
    await backend.close();
  }
}

describe('postgres plain reads behind a lock', () => {
  it('give up within the call and leave nothing waiting on the server; read again once the lock is gone', async ({ skip }) => {
    if (skipped) return skip(skipped);
    await readBehindLock(shortTimeout(pgUrl!));
  }, 30_000);

  it('through PgBouncer in transaction mode, the same', async ({ skip }) => {
    if (skipped ?? noBouncer) return skip(skipped ?? noBouncer);
    await readBehindLock(shortTimeout(bouncer!.url));
  }, 30_000);

  it('the commit listener: its polls stuck behind a lock are cancelled, not left to pile up; it hears commits again after', async ({
    skip,
  }) => {
    if (skipped) return skip(skipped);
    const url = withFreshSchema(pgUrl!);
    const { connectionString, schema } = parsePostgresUrl(url);
    const backend = await PostgresBackend.open(url);
    const t = tablesOf(schema);
    const operator = await operatorOf(schema);
    const heard: unknown[] = [];
    const listener = new CommitListener({
      // the client gives up on a statement after 400 ms; polls every 200 ms
      config: { connectionString, query_timeout: 400 },
      channel: t.channel,
      instance: 'reader',
      pollMs: 200,
      readLog: (client, after, limit) => readLog(client, t, after, limit),
    });
    const unsubscribe = listener.subscribe((event) => heard.push(event));
    try {
      await sleep(500); // connected and caught up
      await operator.query('BEGIN');
      await operator.query(`LOCK TABLE ${t.meta} IN ACCESS EXCLUSIVE MODE`);
      const counts: number[] = [];
      for (let i = 0; i < 12; i++) {
        await sleep(250);
        counts.push(await operator.waiting());
      }
      expect(Math.max(...counts), `waiting statements over 3 s: ${counts.join(' ')}`).toBeLessThanOrEqual(1);
      await operator.query('ROLLBACK');
      await sleep(1500); // reconnected after its backoff, caught up
      heard.length = 0;
      const other = await PostgresBackend.open(url);
      await other.transaction(async () => ({
        result: null,
        writes: new Map([['k', { record: { v: 1, ver: 1, at: Date.now(), by: 'x' } }]]),
      }));
      await other.close();
      for (let i = 0; i < 100 && !heard.some((e) => typeof e === 'object' && e !== null && 'keys' in e); i++) await sleep(20);
      expect(heard).toContainEqual(expect.objectContaining({ keys: ['k'] }));
    } finally {
      unsubscribe();
      await listener.close();
      await operator.close();
      await backend.close();
    }
  }, 30_000);

  it("a write given up on at the call's deadline is cancelled on the server too, not left holding the store's lock", async ({ skip }) => {
    if (skipped) return skip(skipped);
    // the server's statement_timeout (10 s by default) outlasts the call (1.5 s here)
    const url = withFreshSchema(pgUrl!);
    const { schema } = parsePostgresUrl(url);
    const t = tablesOf(schema);
    const backend = await PostgresBackend.open(url, { callBudgetMs: 1500 });
    const other = await PostgresBackend.open(url);
    const operator = await operatorOf(schema);
    const write = (b: PostgresBackend, v: number) =>
      b.transaction(async () => ({ result: null, writes: new Map([['k', { record: { v, ver: v, at: Date.now(), by: 'x' } }]]) }), ['k']);
    try {
      await write(backend, 1);
      await operator.query('BEGIN');
      await operator.query(`LOCK TABLE ${t.records} IN ACCESS EXCLUSIVE MODE`);
      const started = Date.now();
      // its first round trip takes the store's lock, then waits for the records
      await expect(write(backend, 2)).rejects.toThrow(/timeout/i);
      expect(Date.now() - started, 'within the call').toBeLessThan(1500 + 1000);
      await sleep(300);
      // (before the cancel: 1, waiting until the server's own timeout, with the store's lock held meanwhile)
      expect(await operator.waiting()).toBe(0);
      await operator.query('ROLLBACK');
      await write(other, 3);
      expect((await backend.get('k'))?.v).toBe(3);
    } finally {
      await operator.close();
      await other.close();
      await backend.close();
    }
  }, 30_000);

  it('through a server: state_get and state_set are STORE_UNAVAILABLE, "nothing was changed", in time; nothing is left waiting', async ({
    skip,
  }) => {
    if (skipped) return skip(skipped);
    const url = shortTimeout(pgUrl!);
    const { schema } = parsePostgresUrl(url);
    const t = tablesOf(schema);
    const a = await spawnAgent(['--store', url, '--agent', 'reader']);
    const operator = await operatorOf(schema);
    try {
      await a.ok('state_set', { key: 'k', value: 'before' });
      await operator.query('BEGIN');
      await operator.query(`LOCK TABLE ${t.records} IN ACCESS EXCLUSIVE MODE`);
      const started = Date.now();
      const error = await a.err('state_get', { key: 'k' });
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toMatch(/Nothing was changed/);
      expect(Date.now() - started, '2 s after statement_timeout').toBeLessThan(GIVES_UP_MS + 1500);
      // a write waits for the records under the server's own statement_timeout, and is not applied
      const writing = Date.now();
      const refused = await a.err('state_set', { key: 'k', value: 'during' });
      expect(refused.code).toBe('STORE_UNAVAILABLE');
      expect(refused.message).toMatch(/statement timeout.*Nothing was changed/);
      expect(refused.details?.outcome).toBeUndefined();
      expect(Date.now() - writing, 'at statement_timeout').toBeLessThan(STATEMENT_TIMEOUT_MS + 1500);
      await sleep(300);
      expect(await operator.waiting()).toBe(0);
      await operator.query('ROLLBACK');
      expect((await a.ok('state_get', { key: 'k' })).value).toBe('before');
    } finally {
      await operator.close();
      await a.close();
    }
  }, 30_000);
});
