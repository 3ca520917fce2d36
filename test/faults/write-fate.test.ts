// Each failure point of a write on Postgres and Redis (before send, after the commit was sent, its reply lost, during
// the doorbell, and a fate that cannot be looked up): the reply tells the truth and the store agrees.
import type { Socket } from 'node:net';
import { createClient } from '@redis/client';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { BlackboardError } from '../../src/errors.js';
import { PostgresBackend } from '../../src/store/postgres/backend.js';
import { type FailPoint as PgPoint, resolveFate } from '../../src/store/postgres/fate.js';
import { parsePostgresUrl, tablesOf } from '../../src/store/postgres/schema.js';
import { RedisBackend } from '../../src/store/redis/backend.js';
import type { FailPoint as RedisPoint } from '../../src/store/redis/fate.js';
import { commitPlan } from '../../src/store/redis/records.js';
import { keysOf, SCRIPTS } from '../../src/store/redis/scripts.js';
import type { CommitEvent } from '../../src/store/types.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { startFaultProxy } from '../services/fault-proxy.js';
import { startPgBouncer } from '../services/pgbouncer.js';
import { withFreshSchema } from '../services/postgres.js';

const PG = process.env.BLACKBOARD_TEST_POSTGRES_URL;
/** a shorter call budget than the default 11 s keeps the unknown-fate cases quick; they still answer within it + 2.5 s */
const BUDGET_MS = 2000;
const REDIS = process.env.BLACKBOARD_TEST_REDIS_URL;

type Point = PgPoint | RedisPoint;
/** Decides, at each failure point, whether to break the connection there (`times` left per point). */
class Faults {
  private readonly left = new Map<Point, number>();
  readonly hit: Point[] = [];
  at(point: Point, times = 1): this {
    this.left.set(point, times);
    return this;
  }
  clear(): void {
    this.left.clear();
  }
  /** whether to fail now at `point` (counts it down) */
  take(point: Point): boolean {
    const n = this.left.get(point) ?? 0;
    if (n <= 0) return false;
    this.left.set(point, n - 1);
    this.hit.push(point);
    return true;
  }
}

const reset = (): Error => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
/** Breaks a pg connection for real: its socket is gone, as after a reset. */
const breakSocket = (client: pg.ClientBase): void =>
  (Reflect.get(client, 'connection') as { stream: { destroy(): void } }).stream.destroy();

interface Harness {
  store: VersionedStore;
  faults: Faults;
  /** a second store on the same data, with no faults (another process) */
  other: VersionedStore;
}

const stores: VersionedStore[] = [];
afterAll(async () => {
  await Promise.allSettled(stores.map((s) => s.close()));
});

async function postgres(): Promise<Harness> {
  const url = withFreshSchema(PG!);
  const faults = new Faults();
  const failPoint = (point: PgPoint, client: pg.ClientBase): void => {
    if (!faults.take(point)) return;
    if (point === 'resolve') throw reset(); // the database cannot be reached to look the fate up
    breakSocket(client);
    // After the commit was answered, the reply is what gets lost: the call sees the reset.
    if (point === 'committed') throw reset();
  };
  const store = new VersionedStore(await PostgresBackend.open(url, { failPoint, safetyPollMs: 200, callBudgetMs: BUDGET_MS }), {
    sweepIntervalMs: 0,
  });
  const other = new VersionedStore(await PostgresBackend.open(url, { safetyPollMs: 200 }), { sweepIntervalMs: 0 });
  stores.push(store, other);
  return { store, faults, other };
}

let prefixes = 0;
async function redis(): Promise<Harness> {
  const url = `${REDIS}?prefix=fate${Date.now().toString(36)}${prefixes++}`;
  const faults = new Faults();
  const backend = await RedisBackend.open(url, { callBudgetMs: BUDGET_MS });
  // A throw at a point is a reset there: before the script was sent ('begin', 'commit': it never arrived), after it
  // was answered ('committed': the reply is lost), or while looking the fate up ('resolve').
  backend.failPoint = (point) => {
    if (faults.take(point)) throw reset();
  };
  const store = new VersionedStore(backend, { sweepIntervalMs: 0 });
  const other = new VersionedStore(await RedisBackend.open(url), { sweepIntervalMs: 0 });
  stores.push(store, other);
  return { store, faults, other };
}

/** About 70 KB of text: past the size from which a record goes as a parameter (its COMMIT and doorbell then apart). */
const big = (i: number): string => `${i}:${"it's \\ $1 é—".repeat(5_000)}`;
const increment = (store: VersionedStore, idempotencyKey?: string) =>
  store.transact((tx) => tx.update('n', 'increment', 1, { by: 'test' }), { idempotencyKey, prefetch: ['n'] });
const failure = async (promise: Promise<unknown>): Promise<BlackboardError> => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BlackboardError);
  return error as BlackboardError;
};

for (const [name, available, open] of [
  ['postgres', PG, postgres],
  ['redis', REDIS, redis],
] as const) {
  describe(`${name}: a write's fate at each failure point`, () => {
    it.skipIf(!available)('a reset before anything was sent costs nothing: the write is retried on a fresh connection', async () => {
      const { store, faults, other } = await open();
      faults.at('begin');
      const { result, revision } = await increment(store);
      expect(faults.hit).toEqual(['begin']);
      expect(result).toMatchObject({ value: 1, version: 1 });
      expect(await other.get('n')).toMatchObject({ value: 1, version: 1 });
      expect(await other.revision()).toBe(revision);
    });

    it.skipIf(!available)('failing again on the retry: "nothing was changed", and nothing was', async () => {
      const { store, faults, other } = await open();
      await increment(store);
      faults.at('begin', 2);
      const error = await failure(increment(store));
      expect(error.code).toBe('STORE_UNAVAILABLE');
      expect(error.message).toMatch(/Nothing was changed/);
      expect(error.details?.outcome).toBeUndefined();
      expect(await other.get('n')).toMatchObject({ value: 1 });
    });

    it.skipIf(!available)(
      'a connection broken as the commit is sent (it never arrived): looked up, not applied, retried once',
      async () => {
        const { store, faults, other } = await open();
        faults.at('commit');
        const { result, revision } = await increment(store);
        expect(faults.hit).toEqual(['commit']);
        expect(result).toMatchObject({ value: 1, version: 1 });
        expect(await other.get('n')).toMatchObject({ value: 1, version: 1, revision });
        // Both attempts cut there: the truth is that nothing changed.
        faults.at('commit', 2);
        const error = await failure(increment(store));
        expect(error.message).toMatch(/Nothing was changed/);
        expect(await other.get('n')).toMatchObject({ value: 1 });
      },
    );

    it.skipIf(!available)('a lookup that ends past the call\'s time is not followed by a late retry: "nothing was changed"', async () => {
      const { store, faults, other } = await open();
      await increment(store);
      // cut as the commit is sent; the lookup fails 7 times (about 2.25 s of pauses, past the 2 s budget), then finds it unapplied
      faults.at('commit').at('resolve', 7);
      const started = Date.now();
      const error = await failure(increment(store));
      expect(faults.hit.filter((p) => p === 'resolve')).toHaveLength(7);
      expect(error.message).toMatch(/Nothing was changed/);
      expect(Date.now() - started).toBeLessThan(BUDGET_MS + 2500);
      expect(await other.get('n')).toMatchObject({ value: 1 });
    });

    it.skipIf(!available)('the commit applied but its reply was lost: looked up and answered as a success with its revision', async () => {
      const { store, faults, other } = await open();
      await increment(store);
      faults.at('committed');
      const { result, revision } = await increment(store);
      expect(faults.hit).toEqual(['committed']);
      expect(result).toMatchObject({ value: 2, version: 2 });
      expect(await other.get('n')).toMatchObject({ value: 2, version: 2, revision });
      expect(await other.revision()).toBe(revision);
    });

    it.skipIf(!available)(
      'a fate that cannot be looked up in time is "unknown"; the same idempotencyKey then applies it exactly once',
      async () => {
        const { store, faults, other } = await open();
        // Applied, reply lost, the store unreachable for the lookup: unknown; the retry replays the first result.
        faults.at('committed').at('resolve', 1000);
        const started = Date.now();
        const error = await failure(increment(store, 'idem:a'));
        expect(Date.now() - started).toBeGreaterThanOrEqual(BUDGET_MS);
        expect(Date.now() - started).toBeLessThan(BUDGET_MS + 2500 + 1000);
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.details?.outcome).toBe('unknown');
        expect(error.message).toMatch(/may or may not have been applied; retry with the same idempotencyKey/);
        expect(error.message).not.toMatch(/Nothing was changed/);
        expect(await other.get('n')).toMatchObject({ value: 1 });
        faults.clear();
        const again = await increment(store, 'idem:a');
        expect(again.result).toMatchObject({ value: 1, version: 1 });
        expect(await other.get('n')).toMatchObject({ value: 1, version: 1 });

        // Cut as it was sent (never applied), lookup impossible: unknown too; the retry applies it, once.
        faults.at('commit').at('resolve', 1000);
        expect((await failure(increment(store, 'idem:b'))).details?.outcome).toBe('unknown');
        expect(await other.get('n')).toMatchObject({ value: 1 });
        faults.clear();
        expect((await increment(store, 'idem:b')).result).toMatchObject({ value: 2, version: 2 });
        expect((await increment(store, 'idem:b')).result).toMatchObject({ value: 2, version: 2 });
        expect(await other.get('n')).toMatchObject({ value: 2, version: 2 });
      },
      40_000,
    );
  });
}

describe('postgres: a write carrying large records as parameters (its COMMIT sent alone)', () => {
  const write = (store: VersionedStore, i: number) =>
    store.transact(
      async (tx) => {
        await tx.set('doc', big(i), { by: 'test' });
        return tx.update('n', 'increment', 1, { by: 'test' });
      },
      { prefetch: ['doc', 'n'] },
    );

  it.skipIf(!PG)('broken before the statement, or after it and before its COMMIT: not applied, retried once, applied once', async () => {
    const { store, faults, other } = await postgres();
    await write(store, 1);
    for (const [i, point] of [
      [2, 'commit'],
      [3, 'written'],
    ] as const) {
      faults.at(point);
      const { result, revision } = await write(store, i);
      expect(faults.hit.at(-1)).toBe(point);
      expect(result).toMatchObject({ value: i, version: i });
      expect(await other.get('n')).toMatchObject({ value: i, version: i, revision });
      expect(await other.get('doc')).toMatchObject({ value: big(i), version: i, revision });
    }
    // Both attempts cut after the statement: nothing was changed, and nothing was.
    faults.at('written', 2);
    const error = await failure(write(store, 4));
    expect(error.message).toMatch(/Nothing was changed/);
    expect(await other.get('n')).toMatchObject({ value: 3 });
    expect(await other.get('doc')).toMatchObject({ value: big(3), version: 3 });
  });

  it.skipIf(!PG)('the COMMIT applied but its reply was lost: answered as a success, and held as written', async () => {
    const { store, faults, other } = await postgres();
    faults.at('committed');
    const { result, revision } = await write(store, 1);
    expect(faults.hit).toEqual(['committed']);
    expect(result).toMatchObject({ value: 1 });
    expect(await other.get('doc')).toMatchObject({ value: big(1), version: 1, revision });
    expect(await store.get('doc')).toMatchObject({ value: big(1), version: 1, revision });
  });
});

describe('postgres: the doorbell after a commit', () => {
  /** What `other` hears of `revision` within `ms` (its events for that revision). */
  const hearing = (other: VersionedStore) => {
    const heard: CommitEvent[] = [];
    const unsubscribe = other.backend.onForeignCommit((event) => heard.push(event));
    return async (revision: number, ms: number): Promise<CommitEvent[]> => {
      const deadline = Date.now() + ms;
      while (!heard.some((e) => 'keys' in e && e.revision === revision) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await new Promise((resolve) => setTimeout(resolve, 300)); // a second report, if any, would come meanwhile
      unsubscribe();
      return heard.filter((e) => 'keys' in e && e.revision === revision);
    };
  };

  it.skipIf(!PG)('a connection broken during the doorbell leaves the write applied and acknowledged; others still hear of it', async () => {
    const { store, faults, other } = await postgres();
    const heardOf = hearing(other);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the listener connects
    faults.at('doorbell');
    // a large record goes as a parameter: its COMMIT and its doorbell are round trips of their own
    const { result, revision } = await store.transact((tx) => tx.set('doc', big(1), { by: 'test' }), { prefetch: ['doc'] });
    expect(faults.hit).toEqual(['doorbell']);
    expect(result).toMatchObject({ version: 1 });
    expect(await other.get('doc')).toMatchObject({ value: big(1), revision });
    // No doorbell rang: the other store's safety poll finds the commit in the change log.
    const heard = await heardOf(revision, 3000);
    expect(heard).toHaveLength(1);
    expect(heard[0]).toMatchObject({ keys: ['doc'] });
  });

  it.skipIf(!PG)('a small commit rings with its COMMIT: heard at once, and once, also when the reply is lost and rung again', async () => {
    const { store, faults, other } = await postgres();
    const heardOf = hearing(other);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the listener connects
    const first = await increment(store);
    // the safety poll runs every 200 ms here: heard within 150 ms is the doorbell's doing
    expect(await heardOf(first.revision, 150)).toEqual([{ revision: first.revision, keys: ['n'] }]);
    // The reply of COMMIT and doorbell together is lost: the fate is looked up, and the doorbell rung again.
    const again = hearing(other);
    faults.at('committed');
    const second = await increment(store);
    expect(faults.hit).toEqual(['committed']);
    expect(second.result).toMatchObject({ value: 2 });
    expect(await again(second.revision, 3000)).toEqual([{ revision: second.revision, keys: ['n'] }]);
  });
});

describe('postgres: a transaction id after a crash-restart', () => {
  it.skipIf(!PG)(
    'a "committed" status once the server restarted counts only with the write\'s own change log rows (ids are handed out again)',
    async () => {
      const url = withFreshSchema(PG!);
      const store = new VersionedStore(await PostgresBackend.open(url), { sweepIntervalMs: 0 });
      stores.push(store);
      await increment(store); // the tables exist
      const parsed = parsePostgresUrl(url);
      const t = tablesOf(parsed.schema);
      const client = new pg.Client({ connectionString: parsed.connectionString });
      await client.connect();
      try {
        // A committed transaction that logged `n` at revision 7 with clock 1234, and one that logged nothing.
        await client.query('BEGIN');
        const logged = (await client.query('SELECT pg_current_xact_id()::text AS xid, pg_postmaster_start_time()::text AS started'))
          .rows[0];
        await client.query(`INSERT INTO ${t.changes} (revision, key, version, deleted, at) VALUES (7, 'n', 2, false, 1234)`);
        await client.query('COMMIT');
        await client.query('BEGIN');
        const other = (await client.query('SELECT pg_current_xact_id()::text AS xid')).rows[0];
        await client.query(`UPDATE ${t.meta} SET compacted = compacted WHERE id = 1`);
        await client.query('COMMIT');
        const sent = { xid: logged.xid, pid: null, started: logged.started, next: 7, now: 1234, logged: ['n'], changes: t.changes };
        const look = (write: typeof sent) => resolveFate({ connectionString: parsed.connectionString }, write, Date.now() + 3000);
        // no restart: the status is trusted
        expect(await look(sent)).toBe('committed');
        expect(await look({ ...sent, xid: other.xid })).toBe('committed');
        // a restart since: the change log decides
        const restarted = { ...sent, started: '2000-01-01 00:00:00+00' };
        expect(await look(restarted)).toBe('committed');
        expect(await look({ ...restarted, xid: other.xid, now: 1235 })).toBe('aborted'); // another transaction's id
        expect(await look({ ...restarted, logged: [] })).toBe('unknown');
      } finally {
        await client.end();
      }
    },
  );
});

describe('postgres behind a pooler: the link cut after the COMMIT left', () => {
  it.skipIf(!PG)(
    'the transaction the pooler keeps open is ended by its own server process: not applied, retried, applied once, at once',
    async ({ skip }) => {
      const bouncer = await startPgBouncer(PG!, 4);
      if ('skipped' in bouncer) return skip(bouncer.skipped);
      const proxy = await startFaultProxy(bouncer.url);
      try {
        const url = withFreshSchema(PG!);
        let cut = false;
        // This client's link to the pooler goes silent and its socket is gone on this side: the pooler never hears that
        // the client left, and keeps the transaction open on its server connection (in progress, holding the lock).
        const failPoint = (point: PgPoint, client: pg.ClientBase): void => {
          if (point !== 'commit' || !cut) return;
          cut = false;
          const { stream } = Reflect.get(client, 'connection') as { stream: Socket };
          proxy.freeze(stream.localPort!);
          stream.destroy();
        };
        const pooled = await PostgresBackend.open(proxy.via(url), { failPoint, safetyPollMs: 200, callBudgetMs: BUDGET_MS });
        const store = new VersionedStore(pooled, { sweepIntervalMs: 0 });
        const other = new VersionedStore(await PostgresBackend.open(url, { safetyPollMs: 200 }), { sweepIntervalMs: 0 });
        stores.push(store, other);
        await increment(store);
        cut = true;
        const started = Date.now();
        const { result, revision } = await increment(store);
        // (the connection's own process id is one PgBouncer made up: ended by it, the fate stayed "in progress", and
        // the call answered "unknown" after its time and grace)
        expect(Date.now() - started).toBeLessThan(BUDGET_MS);
        expect(cut).toBe(false);
        expect(result).toMatchObject({ value: 2, version: 2 });
        expect(await other.get('n')).toMatchObject({ value: 2, version: 2, revision });
        // nothing of the store's is left open on the server
        const monitor = new pg.Client({ connectionString: PG });
        await monitor.connect();
        const { rows } = await monitor.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' AND query LIKE $1`,
          [`%"${new URL(url).searchParams.get('schema')}"%`],
        );
        await monitor.end();
        expect(rows[0].n).toBe(0);
      } finally {
        proxy.heal();
        await proxy.close();
        await bouncer.stop();
      }
    },
  );
});

describe('redis: the fence', () => {
  it.skipIf(!REDIS)(
    'a commit script that arrives after its lookup fenced it applies nothing; one that was not fenced leaves its marker',
    async () => {
      const prefix = `fence${Date.now().toString(36)}`;
      const keys = keysOf(prefix);
      const client = createClient({ url: REDIS, RESP: 2 });
      await client.connect();
      try {
        const write = (value: number) => new Map([['k', { record: { v: value, ver: value, at: Date.now(), by: 't' }, log: true }]]);
        const run = (marker: string, value: number) =>
          client.sendCommand([
            'EVAL',
            SCRIPTS.COMMIT,
            String(keys.length + 1),
            ...keys,
            marker,
            ...commitPlan(new Map(), [], Date.now(), 0, write(value), 60_000).args,
          ]);
        // Looked up first: the lookup fences the marker, the late script then applies nothing.
        expect(await client.sendCommand(['EVAL', SCRIPTS.RESOLVE, String(keys.length + 1), ...keys, `{${prefix}}:fate:a`, '60000'])).toBe(
          'fenced',
        );
        expect(await run(`{${prefix}}:fate:a`, 1)).toEqual([2, 0]);
        expect(await client.sendCommand(['HGET', keys[1], 'k'])).toBeNull();
        // Applied first: its marker holds its revision, and the lookup finds it.
        expect(await run(`{${prefix}}:fate:b`, 1)).toEqual([1, 1]);
        expect(await client.sendCommand(['EVAL', SCRIPTS.RESOLVE, String(keys.length + 1), ...keys, `{${prefix}}:fate:b`, '60000'])).toBe(
          '1',
        );
        const ttl = Number(await client.sendCommand(['PTTL', `{${prefix}}:fate:b`]));
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
      } finally {
        await client.close();
      }
    },
  );
});
