// One --http server on Postgres while another session holds the board's lock row (an operator's open transaction, a
// frozen host) and many agents write: the writes wait for the lock, but they must not take every connection of the
// pool, so plain reads (which need no lock) still answer in milliseconds, and the server opens no connections past
// its `pool_max`. Before, the waiting writes held the whole pool: each read failed STORE_UNAVAILABLE after waiting 5 s
// for a connection, and each write retried on a connection of its own, past the pool.
import { type ChildProcess, spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLI, sleep } from '../helpers.js';
import { testPostgres, withFreshSchema } from '../services/postgres.js';
import { httpAgent, type HttpAgent } from './http-helpers.js';

let pgUrl: string | undefined;
let release: (() => Promise<void>) | undefined;
let skipped: string | undefined;
let child: ChildProcess | undefined;
const agents: HttpAgent[] = [];

beforeAll(async () => {
  const found = await testPostgres();
  if ('skipped' in found) skipped = found.skipped;
  else ({ url: pgUrl, release } = found);
}, 60_000);
afterAll(async () => {
  await Promise.all(agents.map((a) => a.close().catch(() => {})));
  child?.kill('SIGKILL');
  await release?.();
});

async function startServer(store: string): Promise<string> {
  child = spawn(process.execPath, [CLI, '--http', '0', '--store', store, '--tools', 'all'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const server = child;
  return new Promise<string>((resolve, reject) => {
    let err = '';
    server.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /(http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
      if (m) resolve(m[1]);
    });
    server.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
}

it('while the lock is held, 30 waiting writers leave reads their connections, within pool_max', async (ctx) => {
  if (skipped || !pgUrl) return ctx.skip(skipped);
  // the connection string's application_name labels this server's connections apart from other tests'
  const app = `held_lock_${Math.random().toString(36).slice(2, 10)}`;
  const store = `${withFreshSchema(pgUrl, 'held')}&application_name=${app}`;
  const schema = new URL(store).searchParams.get('schema')!;
  const url = await startServer(store);
  const writers = await Promise.all(Array.from({ length: 30 }, (_, i) => httpAgent(url, { 'x-blackboard-agent': `writer${i}` })));
  agents.push(...writers);
  await writers[0].ok('state_set', { key: 'seed', value: 1 });
  // an agent that only reads (one that has written enters its thread in a transaction on each stateless request)
  const reader = await httpAgent(url, { 'x-blackboard-agent': 'reader' });
  agents.push(reader);
  await reader.ok('state_get', { key: 'seed' });

  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  const connections = async (): Promise<number> =>
    Number((await admin.query('SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1', [app])).rows[0].n);
  const locker = new pg.Client({ connectionString: pgUrl });
  await locker.connect();
  try {
    await locker.query('BEGIN');
    await locker.query(`SELECT * FROM "${schema}".meta FOR UPDATE`);
    const lockedAt = Date.now();
    let held = true;
    const writing = writers.map(async (w, i) => {
      for (let j = 0; held; j++) await w.raw('state_set', { key: `k${i}`, value: j });
    });
    let most = 0;
    const sampling = (async () => {
      while (held) {
        most = Math.max(most, await connections());
        await sleep(250);
      }
    })();
    await sleep(500); // the writers are waiting for the lock
    const reads: { at: number; ms: number; error?: string }[] = [];
    for (const until = Date.now() + 7000; Date.now() < until; ) {
      const started = Date.now();
      const result = await reader.raw('state_get', { key: 'seed' });
      reads.push({
        at: started - lockedAt,
        ms: Date.now() - started,
        error: result.isError ? (result.content[0] as { text: string }).text : undefined,
      });
      await sleep(100);
    }
    held = false;
    await locker.query('ROLLBACK');
    await Promise.all([...writing, sampling]);
    expect(reads.filter((r) => r.error)).toEqual([]);
    expect(Math.max(...reads.map((r) => r.ms))).toBeLessThan(1500);
    // the pool (pool_max 10) and the commit listener
    expect(most).toBeLessThanOrEqual(11);
    // and writes go on once the lock is gone
    expect(await writers[0].ok('state_set', { key: 'after', value: 1 })).toMatchObject({ version: expect.any(Number) });
  } finally {
    await locker.end().catch(() => {});
    await admin.end().catch(() => {});
  }
}, 60_000);
