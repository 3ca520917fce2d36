// Shared by the link-fault suites: servers through a fault proxy, a ledger of every reply, checks against the final state.
import { afterAll, expect } from 'vitest';
import { sleep, spawnAgent, type Spawned } from '../helpers.js';
import { startFaultProxy, type FaultProxy } from '../services/fault-proxy.js';
import { withFreshSchema, type PostgresHandle } from '../services/postgres.js';
import type { RedisHandle } from '../services/redis.js';

export const PG = process.env.BLACKBOARD_TEST_POSTGRES_URL;
export const REDIS = process.env.BLACKBOARD_TEST_REDIS_URL;
export const LISTS = 8;
const t0 = Date.now();

export const spawned: Spawned[] = [];
export const proxies: FaultProxy[] = [];
export const databases: Array<PostgresHandle | RedisHandle> = [];
afterAll(async () => {
  await Promise.allSettled(spawned.map((a) => a.close()));
  await Promise.allSettled(proxies.map((p) => p.close()));
  await Promise.allSettled(databases.map((d) => d.destroy()));
});
export async function server(url: string, agent: string): Promise<Spawned> {
  const a = await spawnAgent(['--store', url, '--agent', agent]);
  spawned.push(a);
  return a;
}
/**
 * A server that has answered its first call. Over SDK v2 a client is connected before the server process has opened
 * its store (the version probe runs on a sibling process), so fault clocks start from this, not from the connect.
 */
export async function readyServer(url: string, agent: string): Promise<Spawned> {
  const a = await server(url, agent);
  await a.raw('state_get', { key: 'list-0' }, { timeout: 60_000 });
  return a;
}
export async function proxyTo(url: string): Promise<FaultProxy> {
  const proxy = await startFaultProxy(url);
  proxies.push(proxy);
  return proxy;
}
let boards = 0;
export const freshStore = (kind: 'postgres' | 'redis', url: string): string =>
  kind === 'postgres' ? withFreshSchema(url, 'link') : `${url}?prefix=link${Date.now().toString(36)}${boards++}`;

interface ToolError {
  code: string;
  message: string;
  details?: { outcome?: string };
}
type Reply = { ok: true; content: Record<string, any> } | { ok: false; error: ToolError };

/** Every call made and what it answered, with how long it took. */
export class Ledger {
  calls = 0;
  failed = 0;
  unknown = 0;
  slowest = 0;
  /** which call was the slowest, and when it ended */
  slowestCall = '';
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
    let result: Awaited<ReturnType<Spawned['raw']>>;
    try {
      result = await agent.raw(tool, args, { timeout: 60_000 });
    } finally {
      this.last = Date.now() - started;
      if (this.last > this.slowest) this.slowestCall = `${tool}, ${Date.now() - t0} ms after start`;
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
export async function checkFinal(reader: Spawned, ledger: Ledger): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const versions = new Map<string, number>();
  for (let i = 0; i < LISTS; i++) {
    const got = await reader.ok('state_get', { key: `list-${i}` });
    versions.set(`list-${i}`, (got.version as number | undefined) ?? 0);
    for (const item of (got.value as string[] | undefined) ?? []) found.set(item, (found.get(item) ?? 0) + 1);
  }
  const missing = [...ledger.acked.keys()].filter((item) => !found.has(item));
  expect(missing, 'acknowledged appends missing').toEqual([]);
  const doubled = [...ledger.acked.keys()].filter((item) => (found.get(item) ?? 0) > 1);
  expect(doubled, 'acknowledged appends applied twice').toEqual([]);
  const lied = [...ledger.unchanged].filter((item) => found.has(item));
  for (const item of lied) console.error(`[link faults] lie about ${item}: ${ledger.why.get(item)}`);
  expect(lied, '"nothing was changed" said of appends that were applied').toEqual([]);
  expect(
    [...found.values()].filter((n) => n > 1),
    'items applied twice',
  ).toEqual([]);
  return versions;
}

/** A state_changes follower from `after`, until told to drain to a revision. */
export function follow(agent: Spawned, ledger: Ledger, after: number) {
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
export function checkFeed(changes: Array<{ key: string; version: number }>, versions: Map<string, number>): void {
  const seen = changes.filter((c) => c.key.startsWith('list-')).map((c) => `${c.key}@${c.version}`);
  expect(new Set(seen).size, 'changes repeated').toBe(seen.length);
  const want: string[] = [];
  for (const [key, version] of versions) for (let v = 1; v <= version; v++) want.push(`${key}@${v}`);
  expect(
    want.filter((w) => !seen.includes(w)),
    'changes missed',
  ).toEqual([]);
}

/** Writers append unique items to the lists and read them, on every server, until `stop()`. */
export function load(agents: Spawned[], ledger: Ledger, perCallPauseMs = 5) {
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

/**
 * A `watch` on `key` for a version after `after`, asked again after an error or a timed-out wait, until it sees one
 * (or 90 s pass): the version it saw, when, and how many of its calls failed on the way.
 */
export async function watchFor(agent: Spawned, key: string, after: number): Promise<{ version?: number; at: number; errors: number }> {
  let errors = 0;
  const end = Date.now() + 90_000;
  while (Date.now() < end) {
    try {
      const reply = await agent.raw('watch', { key, afterVersion: after, waitMs: 40_000 }, { timeout: 60_000 });
      const content = reply.structuredContent as { version?: number; timedOut?: boolean } | undefined;
      if (!reply.isError && content && !content.timedOut) return { version: content.version, at: Date.now(), errors };
      if (reply.isError) errors++;
    } catch {
      errors++;
    }
    await sleep(200);
  }
  return { at: Date.now(), errors };
}

/** Sets `key` through `agent`, asking again until it succeeds; resolves to when it was acknowledged. */
export async function setUntilDone(agent: Spawned, key: string, value: unknown): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const reply = await agent.raw('state_set', { key, value, idempotencyKey: `${key}-${JSON.stringify(value)}` }, { timeout: 60_000 });
    if (!reply.isError) return Date.now();
    await sleep(200);
  }
  throw new Error(`${key} could not be set`);
}
