// The link between servers and Postgres or Redis failing under load (through a fault proxy): resets every ~3 s, a
// silent partition with kill -9s and a database crash-restart. Every reply is checked against the final state.
import { afterAll, describe, expect, it } from 'vitest';
import { sleep, spawnAgent, type Spawned } from '../helpers.js';
import { startFaultProxy, type FaultProxy } from '../services/fault-proxy.js';
import { startPostgres, withFreshSchema, type PostgresHandle } from '../services/postgres.js';
import { startRedis, type RedisHandle } from '../services/redis.js';

const PG = process.env.BLACKBOARD_TEST_POSTGRES_URL;
const REDIS = process.env.BLACKBOARD_TEST_REDIS_URL;
const LISTS = 8;
const t0 = Date.now();

const spawned: Spawned[] = [];
const proxies: FaultProxy[] = [];
const databases: Array<PostgresHandle | RedisHandle> = [];
afterAll(async () => {
  await Promise.allSettled(spawned.map((a) => a.close()));
  await Promise.allSettled(proxies.map((p) => p.close()));
  await Promise.allSettled(databases.map((d) => d.destroy()));
});
async function server(url: string, agent: string): Promise<Spawned> {
  const a = await spawnAgent(['--store', url, '--agent', agent]);
  spawned.push(a);
  return a;
}
async function proxyTo(url: string): Promise<FaultProxy> {
  const proxy = await startFaultProxy(url);
  proxies.push(proxy);
  return proxy;
}
let boards = 0;
const freshStore = (kind: 'postgres' | 'redis', url: string): string =>
  kind === 'postgres' ? withFreshSchema(url, 'link') : `${url}?prefix=link${Date.now().toString(36)}${boards++}`;

interface ToolError {
  code: string;
  message: string;
  details?: { outcome?: string };
}
type Reply = { ok: true; content: Record<string, any> } | { ok: false; error: ToolError };

/** Every call made and what it answered, with how long it took. */
class Ledger {
  calls = 0;
  failed = 0;
  unknown = 0;
  slowest = 0;
  /** append items by what their reply said */
  readonly acked = new Map<string, { key: string; version: number }>();
  readonly unchanged = new Set<string>();
  readonly undecided = new Set<string>();
  readonly errors: string[] = [];
  readonly why = new Map<string, string>();
  last = 0;
  /** appends made: makes every item (and its idempotencyKey) unique across load phases */
  items = 0;

  async call(agent: Spawned, tool: string, args: Record<string, unknown>): Promise<Reply> {
    const started = Date.now();
    let result;
    try {
      result = await agent.raw(tool, args, { timeout: 60_000 });
    } finally {
      this.last = Date.now() - started;
      this.slowest = Math.max(this.slowest, this.last);
      this.calls++;
    }
    if (!result.isError) return { ok: true, content: result.structuredContent as Record<string, any> };
    const error = (JSON.parse((result.content as Array<{ text: string }>)[0].text) as { error: ToolError }).error;
    this.failed++;
    if (error.details?.outcome === 'unknown') this.unknown++;
    if (this.errors.length < 20) this.errors.push(`${tool}: ${error.code} ${error.message}`);
    return { ok: false, error };
  }

  /** One append of a unique item; retried with the same idempotencyKey while its fate is unknown. */
  async append(agent: Spawned, key: string, item: string): Promise<void> {
    for (let tries = 0; tries < 5; tries++) {
      const reply = await this.call(agent, 'state_update', { key, op: 'append', value: item, idempotencyKey: `idem-${item}` });
      if (reply.ok) {
        this.acked.set(item, { key, version: reply.content.version as number });
        this.undecided.delete(item);
        return;
      }
      if (reply.error.details?.outcome === 'unknown') {
        this.undecided.add(item);
        await sleep(200);
        continue;
      }
      if (/Nothing was changed/.test(reply.error.message) && !this.undecided.has(item)) {
        this.unchanged.add(item);
        this.why.set(item, `${Date.now() - t0} ms after start, took ${this.last} ms: ${reply.error.message}`);
      }
      return;
    }
  }
}

/**
 * Checks the final state against every reply: each acknowledged item is in its list exactly once (at its version);
 * no item whose reply said "nothing was changed" is anywhere; an undecided one is there at most once. Returns the
 * final versions of the lists.
 */
async function checkFinal(reader: Spawned, ledger: Ledger): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const versions = new Map<string, number>();
  for (let i = 0; i < LISTS; i++) {
    const got = await reader.ok('state_get', { key: `list-${i}` });
    versions.set(`list-${i}`, (got.version as number | undefined) ?? 0);
    for (const item of (got.value as string[] | undefined) ?? []) found.set(item, (found.get(item) ?? 0) + 1);
  }
  const missing = [...ledger.acked.keys()].filter((item) => found.get(item) !== 1);
  expect(missing, 'acknowledged appends missing or doubled').toEqual([]);
  const lied = [...ledger.unchanged].filter((item) => found.has(item));
  for (const item of lied) console.error(`[link faults] lie about ${item}: ${ledger.why.get(item)}`);
  expect(lied, '"nothing was changed" said of appends that were applied').toEqual([]);
  expect([...found.values()].filter((n) => n > 1), 'items applied twice').toEqual([]);
  return versions;
}

/** A state_changes follower from `after`, until told to drain to a revision. */
function follow(agent: Spawned, ledger: Ledger, after: number) {
  const changes: Array<{ key: string; version: number }> = [];
  let drainTo = Infinity;
  const done = (async () => {
    while (after < drainTo) {
      const reply = await ledger.call(agent, 'state_changes', { afterRevision: after, waitMs: 1000, limit: 500 });
      if (!reply.ok) {
        await sleep(100);
        continue;
      }
      changes.push(...(reply.content.changes as Array<{ key: string; version: number }>));
      after = reply.content.revision as number;
    }
  })();
  return {
    changes,
    async drain(revision: number) {
      drainTo = revision;
      await done;
    },
  };
}

/** The follower saw every version of every list once, in order, up to the final one. */
function checkFeed(changes: Array<{ key: string; version: number }>, versions: Map<string, number>): void {
  const seen = changes.filter((c) => c.key.startsWith('list-')).map((c) => `${c.key}@${c.version}`);
  expect(new Set(seen).size, 'changes repeated').toBe(seen.length);
  const want: string[] = [];
  for (const [key, version] of versions) for (let v = 1; v <= version; v++) want.push(`${key}@${v}`);
  expect(want.filter((w) => !seen.includes(w)), 'changes missed').toEqual([]);
}

/** Writers append unique items to the lists and read them, on every server, until `stop()`. */
function load(agents: Spawned[], ledger: Ledger, perCallPauseMs = 5) {
  let stopped = false;
  const loops = agents.map(async (agent, w) => {
    try {
      for (let n = 0; !stopped; n++) {
        const key = `list-${(w + n) % LISTS}`;
        if (n % 2 === 0) await ledger.append(agent, key, `${agent.pid}-${ledger.items++}`);
        else await ledger.call(agent, 'state_get', { key });
        await sleep(perCallPauseMs);
      }
    } catch {
      // the server was killed: its last call has no answer
    }
  });
  return async () => {
    stopped = true;
    await Promise.all(loops);
  };
}

for (const kind of ['postgres', 'redis'] as const) {
  const base = kind === 'postgres' ? PG : REDIS;
  describe(`${kind}: the link to the database fails`, () => {
    it.skipIf(!base)(
      'resets every ~3 s for 40 s under 6 server processes: replies match the final state, almost no call fails',
      async () => {
        const store = freshStore(kind, base!);
        const proxy = await proxyTo(store);
        const agents = await Promise.all(Array.from({ length: 6 }, (_, i) => server(proxy.via(store), `s${i}`)));
        const ledger = new Ledger();
        const feed = follow(agents[0], ledger, 0);
        const stop = load(agents, ledger);
        let resets = 0;
        const end = Date.now() + 40_000;
        while (Date.now() < end) {
          await sleep(2500 + Math.random() * 1000);
          if (proxy.resetAll() > 0) resets++;
        }
        await stop();
        const reader = await server(store, 'reader'); // straight to the database
        const versions = await checkFinal(reader, ledger);
        await feed.drain((await reader.ok('state_changes', {})).revision as number);
        checkFeed(feed.changes, versions);
        const summary = `${ledger.calls} calls, ${ledger.failed} failed, ${ledger.unknown} unknown, ${resets} resets, slowest ${ledger.slowest} ms; ${ledger.errors.join(' | ')}`;
        console.error(`[link faults] ${kind} resets: ${summary}`);
        expect(resets).toBeGreaterThanOrEqual(10);
        expect(ledger.calls).toBeGreaterThan(300);
        expect(ledger.failed, summary).toBeLessThanOrEqual(ledger.calls * 0.001);
        expect(ledger.unknown, summary).toBeLessThanOrEqual(ledger.calls * 0.001);
      },
      120_000,
    );

    it.skipIf(!base)(
      'a 12 s silent partition, server kill -9s and a database crash-restart: every call answers within 15 s, all recovers, the follower misses nothing',
      async () => {
        const started = kind === 'postgres' ? await startPostgres({ maxConnections: 100 }) : await startRedis();
        if ('skipped' in started) return;
        databases.push(started);
        const store = freshStore(kind, started.url);
        const proxy = await proxyTo(store);
        const agents = await Promise.all(Array.from({ length: 4 }, (_, i) => server(proxy.via(store), `p${i}`)));
        const ledger = new Ledger();
        const feed = follow(agents[0], ledger, 0);
        // Writers on the servers that will be killed, and on the ones that stay.
        let stop = load(agents, ledger, 20);
        await sleep(2000);
        const healed = proxy.partition(12_000);
        await sleep(4000);
        agents[3].kill(); // kill -9 during the partition
        await healed;
        await stop();
        const survivors = [...agents.slice(0, 3), await server(proxy.via(store), 'p4')];
        stop = load(survivors.slice(1), ledger, 20);
        await sleep(2000);
        // The database crashes and comes back; another server is killed meanwhile.
        await started.kill9();
        survivors[3].kill();
        await sleep(500);
        await started.restart();
        await sleep(4000);
        await stop();
        // Recovered by itself: every surviving server answers again.
        for (const agent of survivors.slice(0, 3)) {
          let reply = await ledger.call(agent, 'state_get', { key: 'list-0' });
          for (let i = 0; !reply.ok && i < 50; i++) {
            await sleep(200);
            reply = await ledger.call(agent, 'state_get', { key: 'list-0' });
          }
          expect(reply.ok).toBe(true);
        }
        const reader = await server(store, 'reader');
        const versions = await checkFinal(reader, ledger);
        await feed.drain((await reader.ok('state_changes', {})).revision as number);
        checkFeed(feed.changes, versions);
        const summary = `${ledger.calls} calls, ${ledger.failed} failed, ${ledger.unknown} unknown, slowest ${ledger.slowest} ms; ${ledger.errors.slice(0, 5).join(' | ')}`;
        console.error(`[link faults] ${kind} partition: ${summary}`);
        expect(ledger.slowest, summary).toBeLessThan(15_000);
        expect(ledger.acked.size).toBeGreaterThan(100);
      },
      120_000,
    );
  });
}
