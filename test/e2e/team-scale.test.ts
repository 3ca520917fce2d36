// The whole team at scale, on one store per backend: 12 agents — six on stdio server processes of their own, six on two
// --http servers (SDK v2 clients pinned to 2026-07-28, SDK v1 clients on 2025-11-25, the Python `mcp` client) — send
// 3,000 messages (direct, by type, to all) while reading and acknowledging. One recipient is killed with kill -9 after
// reading a page it had not acknowledged, one sender in the middle of a send; both are restarted as the same agent.
// The database server is killed and restarted mid-run (Postgres and Redis, each on a server of this test's own; SQLite
// has no server: its file is shared by the processes of this machine, and their restarts are its only ones). Every
// acknowledged message reaches each of its recipients and no one else, in send order per sender; duplicates are only
// re-reads of pages a killed agent had not acknowledged.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { sleep, type Era } from '../helpers.js';
import { startPostgres, withFreshSchema } from '../services/postgres.js';
import { startRedis } from '../services/redis.js';
import { sharedStores } from '../stores.js';
import { writeAuthFile } from './http-helpers.js';
import { httpCaller, httpServer, preparePython, pythonCaller, stdioCaller, type Caller, type Reply } from './team-scale-members.js';

const TOTAL = 3000;
const TYPES = ['planner', 'worker', 'reviewer'] as const;
type Via = 'stdio-2026' | 'stdio-2025' | 'v2-2026' | 'v1-2025' | 'python';
/** name, agent type, client, HTTP server (0 or 1) */
const LAYOUT: Array<[string, string, Via, number?]> = [
  ['s1', 'worker', 'stdio-2026'],
  ['s2', 'reviewer', 'stdio-2026'],
  ['s3', 'planner', 'stdio-2026'],
  ['s4', 'worker', 'stdio-2025'],
  ['s5', 'reviewer', 'stdio-2025'],
  ['s6', 'planner', 'stdio-2025'],
  ['h1', 'worker', 'v2-2026', 0],
  ['h2', 'reviewer', 'v1-2025', 0],
  ['h3', 'planner', 'v2-2026', 0],
  ['h4', 'worker', 'v1-2025', 1],
  ['h5', 'reviewer', 'v2-2026', 1],
  ['py', 'planner', 'python', 1],
];
const PER_SENDER = TOTAL / LAYOUT.length;
/** killed after reading a page it has not acknowledged, a quarter of the way in */
const RECIPIENT_VICTIM = 's2';
/** killed with a send in flight, at 45% */
const SENDER_VICTIM = 's4';
/** How long a reader takes to act on a page before it acknowledges it and reads on. */
const READ_PAUSE_MS = 1000;
/** How long one call keeps being retried while the store is unavailable (the database restart takes a few seconds). */
const RETRY_MS = 60_000;

interface Member {
  name: string;
  type: string;
  via: Via;
  caller: Caller;
  /** bumped at each kill: a call started under an older generation went down with its process */
  generation: number;
  /** resolves once the member's process is up again after a kill */
  ready: Promise<void>;
  /** the ids of the last page read and not yet acknowledged */
  unacked: string[];
  /** ids this member may read twice: pages it had read and not acknowledged when its process was killed */
  allowedDups: Set<string>;
  got: Array<{ id: string; from: string; content: string }>;
}
interface Sent {
  sender: string;
  n: number;
  to: string;
  recipients: string[];
  /** acknowledged: the reply's message id */
  id?: string;
  /** in flight when its sender's process was killed: it may or may not have been sent, but never to only some */
  maybe?: boolean;
}

interface Database {
  url: string;
  /** kill -9 of the database server and a start on the same data (none for SQLite: no server to restart) */
  restart?: () => Promise<void>;
  destroy(): Promise<void>;
}

/** A store of this test's own: Postgres and Redis on dedicated servers it may kill, SQLite in a file of its own. */
async function openDatabase(name: string): Promise<Database | { skipped: string }> {
  if (name === 'sqlite') return { url: `sqlite://${join(tempDir(), 'team.db')}`, destroy: async () => {} };
  if (name === 'postgres') {
    const pg = await startPostgres();
    if ('skipped' in pg) return pg;
    return {
      url: withFreshSchema(pg.url),
      restart: async () => {
        await pg.kill9();
        await pg.restart();
      },
      destroy: () => pg.destroy(),
    };
  }
  const redis = await startRedis();
  if ('skipped' in redis) return redis;
  return { url: `${redis.url}?prefix=team`, restart: () => redis.restart(), destroy: () => redis.stop() };
}

let python: { python?: string; why?: string } = {};
beforeAll(() => {
  python = preparePython();
  if (python.why)
    console.warn(`[team-scale] the Python mcp client cannot run here (${python.why}): agent "py" is an SDK v1 client instead`);
}, 300_000);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

describe.each(sharedStores().map((s) => s.name))('a team of 12 agents at scale on %s', (backend) => {
  const restarts = backend === 'sqlite' ? 'and a sender (a file: no database server to restart)' : 'and a sender, and a database restart';
  it(`3,000 messages reach exactly their recipients, in order, across kill -9 of a recipient ${restarts}`, async ({ skip }) => {
    const t0 = Date.now();
    const db = await openDatabase(backend);
    if ('skipped' in db) return skip(db.skipped);
    cleanups.push(() => db.destroy());
    const store = db.url;

    // Two HTTP servers with a token per agent; the auth file gives each its agent name and type.
    const tokens = new Map(LAYOUT.map(([name]) => [name, `tok-${name}-${randomBytes(12).toString('hex')}`]));
    const authFile = writeAuthFile(
      LAYOUT.filter(([, , via]) => !via.startsWith('stdio')).map(([name, type]) => ({
        token: tokens.get(name),
        agent: name,
        agentType: type,
        namespaces: ['*'],
        access: 'readwrite',
      })),
    );
    const servers: ChildProcess[] = [];
    cleanups.push(async () => {
      for (const s of servers) if (s.exitCode === null) s.kill('SIGKILL');
    });
    const urls = await Promise.all([httpServer(store, authFile, servers), httpServer(store, authFile, servers)]);
    let pythonVersion: string | undefined;
    const connect = async (name: string, type: string, via: Via, server?: number): Promise<Caller> => {
      if (via === 'stdio-2026' || via === 'stdio-2025')
        return stdioCaller(store, name, type, (via === 'stdio-2026' ? 'modern' : 'legacy') as Era);
      const url = urls[server!];
      if (via === 'python' && python.python) {
        const caller = await pythonCaller(python.python, url, tokens.get(name)!, `t-${name}`);
        pythonVersion = caller.protocolVersion;
        return caller;
      }
      return httpCaller(url, tokens.get(name)!, `t-${name}`, via === 'v2-2026' ? 'v2-2026' : 'v1-2025', name);
    };
    const members: Member[] = await Promise.all(
      LAYOUT.map(async ([name, type, via, server]) => {
        const caller = await connect(name, type, via, server);
        cleanups.push(() => caller.close());
        return { name, type, via, caller, generation: 0, ready: Promise.resolve(), unacked: [], allowedDups: new Set<string>(), got: [] };
      }),
    );

    const ok = async (m: Member, tool: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> => {
      const started = Date.now();
      for (;;) {
        const r: Reply = await m.caller.call(tool, args);
        if (r.ok) return r.value;
        if (r.code !== 'STORE_UNAVAILABLE' || Date.now() - started > RETRY_MS) throw new Error(`${m.name}: ${tool} failed: ${r.text}`);
        await sleep(100);
      }
    };
    // Everyone is on the roster before the first send: recipients are resolved from it at send time.
    await Promise.all(members.map((m) => ok(m, 'whoami')));
    for (const end = Date.now() + 20_000; ; ) {
      const listed = ((await ok(members[0], 'team_list')).agents as Array<{ agent: string; agentType?: string }>).map(
        (a) => `${a.agent}/${a.agentType}`,
      );
      if (listed.length === members.length) {
        expect(listed.sort()).toEqual(members.map((m) => `${m.name}/${m.type}`).sort());
        break;
      }
      if (Date.now() > end) throw new Error(`the roster shows ${listed.join(', ')}; expected all ${members.length} agents`);
      await sleep(100);
    }
    const tReady = Date.now();

    const sent = new Map<string, Sent>(); // by "sender#n"
    const problems: string[] = [];
    let acked = 0;
    const progress = (): number => acked / TOTAL;
    const events: string[] = [];

    /** kill -9 of a member's stdio server process, and a new one for the same agent in the same thread */
    const restartMember = async (m: Member, why: string): Promise<void> => {
      m.generation++;
      for (const id of m.unacked) m.allowedDups.add(id);
      m.unacked = [];
      let up!: () => void;
      m.ready = new Promise((resolve) => (up = resolve));
      m.caller.kill!();
      events.push(`${why} ${m.name} killed at ${acked} acknowledged sends`);
      const [, type, via] = LAYOUT.find(([name]) => name === m.name)!;
      for (const started = Date.now(); ; ) {
        try {
          m.caller = await connect(m.name, type, via);
          break;
        } catch (error) {
          // the database may be restarting at the same moment: a server cannot open the store until it is back
          if (Date.now() - started > RETRY_MS) throw error;
          await sleep(200);
        }
      }
      const caller = m.caller;
      cleanups.push(() => caller.close());
      up();
    };

    const others = (m: Member): Member[] => members.filter((o) => o !== m);
    /** whom `to` reaches, from the roster the test set up: every agent but the sender for `all` and a type */
    const intended = (m: Member, to: string): string[] => {
      if (to === 'all') return others(m).map((o) => o.name);
      if (to.startsWith('agentType:'))
        return others(m)
          .filter((o) => o.type === to.slice('agentType:'.length))
          .map((o) => o.name);
      return [to];
    };
    const target = (m: Member, n: number, i: number): string => {
      if (n % 3 === 0) return others(m)[(n / 3 + i) % (members.length - 1)].name;
      if (n % 3 === 1) return `agentType:${TYPES[(n + i) % TYPES.length]}`;
      return 'all';
    };

    const sendMs: number[] = [];
    let senderKilled = false;
    const send = async (m: Member, i: number): Promise<void> => {
      for (let n = 1; n <= PER_SENDER; n++) {
        const to = target(m, n, i);
        const record: Sent = { sender: m.name, n, to, recipients: intended(m, to) };
        sent.set(`${m.name}#${n}`, record);
        const args = { to, content: `${m.name}#${n} to ${to}`, idempotencyKey: `${m.name}-${n}` };
        for (const started = Date.now(); ; ) {
          await m.ready;
          const gen = m.generation;
          const attempt = m.caller.call('message_send', args).catch((error: Error) => error);
          if (m.name === SENDER_VICTIM && !senderKilled && (progress() >= 0.45 || n > PER_SENDER * 0.6)) {
            senderKilled = true;
            await sleep(Math.random() * 4); // the send is on its way, or in the server's transaction
            await restartMember(m, 'sender');
          }
          const r = await attempt;
          if (r instanceof Error) {
            if (m.generation !== gen) {
              record.maybe = true; // went down with the process: the agent does not know whether it was sent
              break;
            }
            if (Date.now() - started > RETRY_MS) throw new Error(`${m.name}: message_send #${n} kept failing: ${r.message}`);
            await sleep(100);
            continue;
          }
          if (!r.ok) {
            if (r.code === 'STORE_UNAVAILABLE' && Date.now() - started < RETRY_MS) {
              await sleep(100);
              continue; // the same idempotency key: applied once however many times it is retried
            }
            throw new Error(`${m.name}: message_send #${n} to ${to} failed: ${r.text}`);
          }
          record.id = r.value.messageId as string;
          sendMs.push(Date.now() - started);
          if (r.value.recipients !== record.recipients.length)
            problems.push(`${record.id} (${m.name}#${n} to ${to}) went to ${r.value.recipients} recipients, not to [${record.recipients}]`);
          acked++;
          break;
        }
      }
    };

    let stopReading = false;
    let recipientKilled = false;
    const read = async (m: Member): Promise<void> => {
      let cursor: string | undefined;
      let gen = m.generation;
      for (let started = Date.now(); ; ) {
        await m.ready;
        if (m.generation !== gen) {
          gen = m.generation;
          cursor = undefined; // a new process: the agent starts from its acknowledged position
        }
        const r = await m.caller
          .call('inbox', { waitMs: 1000, limit: 100, ...(cursor !== undefined ? { ack: cursor } : {}) })
          .catch((e: Error) => e);
        if (r instanceof Error || !r.ok) {
          const why = r instanceof Error ? r.message : r.text;
          const retry = r instanceof Error ? m.generation !== gen || Date.now() - started < RETRY_MS : r.code === 'STORE_UNAVAILABLE';
          if (!retry || Date.now() - started > RETRY_MS) throw new Error(`${m.name}: inbox kept failing: ${why}`);
          await sleep(100);
          continue;
        }
        started = Date.now();
        const page = r.value.messages as Array<{ id: string; from: string; content: string }>;
        m.got.push(...page);
        if (m.generation !== gen) {
          for (const msg of page) m.allowedDups.add(msg.id); // read by a process killed before it could acknowledge
          continue;
        }
        m.unacked = page.map((msg) => msg.id);
        cursor = r.value.cursor as string;
        if (m.name === RECIPIENT_VICTIM && !recipientKilled && page.length > 0 && progress() >= 0.25) {
          recipientKilled = true;
          await restartMember(m, 'recipient'); // read, never acknowledged: the new process reads the page again
          continue;
        }
        if (stopReading && page.length === 0) return; // the empty page's call acknowledged the last one
        if (page.length > 0) await sleep(READ_PAUSE_MS); // acting on what it read
      }
    };

    let restartAt: string | undefined;
    const readers = members.map((m) => read(m));
    const outage = (async () => {
      if (!db.restart) return; // SQLite: no database server; its restarts are the agents' processes above
      while (progress() < 0.6) await sleep(20);
      const at = acked;
      const started = Date.now();
      await db.restart();
      restartAt = `database killed at ${at} acknowledged sends, back in ${Date.now() - started} ms (at ${acked})`;
      events.push(restartAt);
    })();
    await Promise.all([...members.map((m, i) => send(m, i)), outage]);
    const tSent = Date.now();

    // Readers go on until every acknowledged message reached each of its recipients (or a minute passed).
    const ackedSends = [...sent.values()].filter((s) => s.id !== undefined);
    const missing = (): string[] =>
      members.flatMap((m) => {
        const ids = new Set(m.got.map((g) => g.id));
        return ackedSends
          .filter((s) => s.recipients.includes(m.name) && !ids.has(s.id!))
          .map((s) => `${s.id} (${s.sender}#${s.n} to ${s.to}) never reached ${m.name}`);
      });
    for (const end = Date.now() + 60_000; missing().length > 0 && Date.now() < end; ) await sleep(250);
    stopReading = true;
    await Promise.all(readers);
    const tDone = Date.now();

    // What the run must show.
    expect(acked + [...sent.values()].filter((s) => s.maybe).length).toBe(TOTAL);
    expect(senderKilled && recipientKilled, events.join('; ')).toBe(true);
    if (db.restart) expect(restartAt, 'the database restart happened mid-run').toBeDefined();
    problems.push(...missing());
    let deliveries = 0;
    let duplicates = 0;
    for (const m of members) {
      const seen = new Map<string, number>();
      const lastN = new Map<string, number>();
      for (const g of m.got) {
        deliveries++;
        const count = (seen.get(g.id) ?? 0) + 1;
        seen.set(g.id, count);
        if (count > 1) {
          duplicates++;
          if (!m.allowedDups.has(g.id))
            problems.push(`${m.name} got ${g.id} (${g.content}) ${count} times, not as a re-read after a crash before its ack`);
          continue;
        }
        const match = /^(\S+)#(\d+) to (\S+)$/.exec(g.content);
        const s = match ? sent.get(`${match[1]}#${match[2]}`) : undefined;
        if (!s) {
          problems.push(`${m.name} got ${g.id} ("${g.content}"), which no one sent`);
          continue;
        }
        if (!s.recipients.includes(m.name)) problems.push(`${m.name} got ${g.id} (${g.content}), meant for [${s.recipients}] only`);
        if (g.from !== s.sender) problems.push(`${m.name} got ${g.id} (${g.content}) from "${g.from}"`);
        if (s.id !== undefined && g.id !== s.id)
          problems.push(`${m.name} got ${g.content} as ${g.id}; its send was acknowledged as ${s.id}`);
        if ((lastN.get(s.sender) ?? 0) >= s.n)
          problems.push(`${m.name} got ${s.sender}#${s.n} (${g.id}) after ${s.sender}#${lastN.get(s.sender)}: out of send order`);
        lastN.set(s.sender, s.n);
      }
    }
    // A send in flight when its sender died reached all its recipients or none.
    const maybes = [...sent.values()].filter((s) => s.maybe);
    for (const s of maybes) {
      const content = `${s.sender}#${s.n} to ${s.to}`;
      const reached = members.filter((m) => m.got.some((g) => g.content === content)).map((m) => m.name);
      if (reached.length > 0 && reached.sort().join() !== [...s.recipients].sort().join())
        problems.push(`${content}, unacknowledged, reached [${reached}] of [${s.recipients}]`);
      events.push(`unacknowledged ${content} (${s.recipients.length} recipients): ${reached.length > 0 ? 'sent' : 'not sent'}`);
    }
    const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.floor(p * (xs.length - 1))];
    const secs = (a: number, b: number): string => `${((b - a) / 1000).toFixed(1)} s`;
    console.log(
      `[team-scale ${backend}] ${acked} acknowledged sends + ${maybes.length} in flight at a kill, ${deliveries} deliveries, ${duplicates} re-reads; ` +
        `setup ${secs(t0, tReady)}, sends ${secs(tReady, tSent)} (${((TOTAL * 1000) / (tSent - tReady)).toFixed(0)}/s; p50 ${pct(sendMs, 0.5)} ms, p99 ${pct(sendMs, 0.99)} ms per send), drain ${secs(tSent, tDone)}; python client: ${pythonVersion ?? `none (${python.why})`}; ${events.join('; ')}`,
    );
    expect(problems.slice(0, 40), `${problems.length} problems`).toEqual([]);
    expect(duplicates).toBeGreaterThan(0); // the killed recipient's page was read again
  }, 300_000);
});
