// npm run bench: every figure set against a baseline measured in the same run, in interleaved rounds (the floor,
// then the operation, round after round), reported as the median of the per-round ratios, with its target and
// whether it is met. Extra stores: BENCH_POSTGRES_URL, BENCH_REDIS_URL (each adds a column; unset = skipped).
// Prints the table on stdout, progress on stderr, and writes bench/results/latest.json. Not part of npm test.
import {
  closeSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { openBackend } from '../dist/store/open.js';
import { dataKey } from '../dist/keyspace.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const CLI = join(here, '..', 'dist', 'cli.js');
const FLOOR = join(here, 'floor-server.mjs');
const SERVER_MEMORY = join(here, '..', 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
const MEMORY_KEEPER = join(here, '..', 'node_modules', 'mcp-memory-keeper', 'dist', 'index.js');
const QUICK = process.env.BENCH_QUICK === '1';
// BENCH_ONLY=watch,concurrency,... runs only those sections (latency, watch, inbox, concurrency, scale, peers)
const want = (section) => !process.env.BENCH_ONLY || process.env.BENCH_ONLY.split(',').includes(section);
const ROUNDS = QUICK ? 3 : 9;
const CALLS = QUICK ? 60 : 200; // sequential calls per series; a round runs one series of the floor and one of the operation
const HEADLINE_KEYS = 1_000;
const SCALES = QUICK ? [1_000, 10_000] : [1_000, 100_000, 1_000_000];
const SHARED_SCALES = QUICK ? [1_000, 10_000] : [1_000, 100_000]; // Postgres and Redis are filled over the network
const PEER_SIZES = QUICK ? [1_000] : [1_000, 10_000, 50_000];
const work = mkdtempSync(join(tmpdir(), 'bb-bench-'));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((xs.length * p) / 100) - 1)];
const r2 = (x) => Math.round(x * 100) / 100;
const r3 = (x) => Math.round(x * 1000) / 1000;
const log = (...a) => console.error('[bench]', ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pad8 = (i) => String(i).padStart(8, '0');

// --- stores ----------------------------------------------------------------------------------------------------------
/** Every store measured: SQLite always; Postgres and Redis when their URL is given. Each `url(tag)` is a fresh store. */
const stores = [{ name: 'sqlite', url: (tag) => `sqlite://${join(work, `${tag}.db`)}`, scales: SCALES }];
const withParam = (url, name, value) => `${url}${url.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`;
const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
if (process.env.BENCH_POSTGRES_URL) {
  stores.push({
    name: 'postgres',
    url: (tag) => withParam(process.env.BENCH_POSTGRES_URL, 'schema', `bench_${tag.replace(/\W/g, '_')}_${unique()}`),
    scales: SHARED_SCALES,
  });
}
if (process.env.BENCH_REDIS_URL) {
  stores.push({
    name: 'redis',
    url: (tag) => withParam(process.env.BENCH_REDIS_URL, 'prefix', `bench:${tag}:${unique()}:`),
    scales: SHARED_SCALES,
  });
}

// --- processes and calls ---------------------------------------------------------------------------------------------
const running = new Set();
async function spawn(command, args, env = {}, cwd = undefined) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [command, ...args],
    env: { ...process.env, ...env },
    stderr: 'ignore',
    cwd,
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  const handle = {
    client,
    pid: transport.pid,
    close: async () => {
      running.delete(handle);
      await client.close();
    },
  };
  running.add(handle);
  return handle;
}
const ours = (url, extra = []) => spawn(CLI, ['--store', url, '--agent', 'bench', ...extra]);

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content[0].text}`);
  return r;
}

/** A function timing one call (ms), after a few unmeasured ones. */
async function sampler(client, name, argsOf) {
  for (let i = 0; i < 5; i++) await call(client, name, argsOf(i + 1_000_000));
  return async (i) => {
    const args = argsOf(i);
    const t = performance.now();
    await call(client, name, args);
    return performance.now() - t;
  };
}

function peakRssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return r2(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

/** Times one fdatasync after a 4 KiB overwrite in `dir` (the store's disk): what one durable commit must cost. */
function fdatasyncProbe(dir) {
  const fd = openSync(join(dir, 'fdatasync.probe'), 'w');
  const block = Buffer.alloc(4096, 1);
  writeSync(fd, block, 0, block.length, 0);
  fdatasyncSync(fd);
  const once = () => {
    writeSync(fd, block, 0, block.length, 0);
    const t = performance.now();
    fdatasyncSync(fd);
    return performance.now() - t;
  };
  once.close = () => {
    closeSync(fd);
    unlinkSync(join(dir, 'fdatasync.probe'));
  };
  return once;
}

/** Fills a store with `n` keys of the global scope through the backend seam, 10,000 per transaction. */
async function fill(url, n) {
  const backend = await openBackend(url, { synchronous: 'NORMAL' });
  const at = Date.now();
  for (let i = 0; i < n; i += 10_000) {
    const writes = new Map();
    for (let j = i; j < Math.min(n, i + 10_000); j++) {
      writes.set(dataKey(undefined, 'global', `key/${pad8(j)}`), {
        record: { v: { n: j, text: 'some agent state' }, ver: 1, at, by: 'bench' },
        log: false,
      });
    }
    await backend.transaction(async () => ({ result: null, writes }));
  }
  await backend.close();
}

/**
 * Interleaved rounds: in each round, for each operation, its calls alternate one by one with calls of its baseline
 * (the disk and the machine are shared and noisy: both see the same moment). Returns, per operation, the median of
 * its per-round ratios (median of its calls / median of the baseline's), and the medians in ms.
 */
async function rounds(ops, count = ROUNDS, n = CALLS) {
  const ratios = Object.fromEntries(ops.map((op) => [op.label, []]));
  const ms = Object.fromEntries(ops.map((op) => [op.label, []]));
  const base = Object.fromEntries(ops.map((op) => [op.label, []]));
  for (let r = 0; r < count; r++) {
    for (const op of ops) {
      const b = [];
      const m = [];
      for (let i = 0; i < (op.calls ?? n); i++) {
        b.push(await op.baseline(i));
        m.push(await op.run(i));
      }
      ratios[op.label].push(median(m) / median(b));
      ms[op.label].push(median(m));
      base[op.label].push(median(b));
    }
  }
  return Object.fromEntries(
    ops.map((op) => [op.label, { ratio: r2(median(ratios[op.label])), ms: r3(median(ms[op.label])), baseMs: r3(median(base[op.label])) }]),
  );
}

// --- the measures ------------------------------------------------------------------------------------------------------
const results = { machine: { node: process.version, cpus: cpus().length, quick: QUICK }, stores: {}, peers: [] };
const floor = await spawn(FLOOR, []);
const noop = await sampler(floor.client, 'noop', (i) => ({ key: `k${i}` }));
const keyOf = (n) => (i) => `key/${pad8((i * 7919) % n)}`;
const fsync = fdatasyncProbe(work);
const fsyncMs = [];
const floorPlusFsync = async (i) => {
  const f = fsync();
  fsyncMs.push(f);
  return (await noop(i)) + f;
};

for (const store of stores) {
  const out = {};
  results.stores[store.name] = out;

  // Latency against the floor, at 1,000 keys.
  if (want('latency')) {
    log(`${store.name}: latency against the SDK floor, ${ROUNDS} interleaved rounds of ${CALLS} calls`);
    {
      const url = store.url('headline');
      await fill(url, HEADLINE_KEYS);
      const s = await ours(url);
      const normal = store.name === 'sqlite' ? await ours(url, ['--sync', 'normal']) : undefined;
      // memory:// runs the same tool layer over a Map: what the tools cost without any store
      const memory = store.name === 'sqlite' ? await ours('memory://') : undefined;
      const key = keyOf(HEADLINE_KEYS);
      const durable = store.name === 'sqlite';
      const ops = [
        { label: 'state_get', baseline: noop, run: await sampler(s.client, 'state_get', (i) => ({ key: key(i) })) },
        {
          label: 'state_set',
          baseline: durable ? floorPlusFsync : noop,
          run: await sampler(s.client, 'state_set', (i) => ({ key: key(i), value: { n: i, text: 'updated state' } })),
        },
        ...(normal
          ? [
              {
                label: 'state_set_normal',
                baseline: noop,
                run: await sampler(normal.client, 'state_set', (i) => ({ key: key(i), value: { n: i } })),
              },
            ]
          : []),
        {
          label: 'state_update',
          baseline: noop,
          run: await sampler(s.client, 'state_update', () => ({ key: 'counter', op: 'increment', value: 1 })),
        },
        {
          label: 'state_list',
          baseline: noop,
          run: await sampler(s.client, 'state_list', () => ({ prefix: 'key/', limit: 100 })),
          calls: Math.ceil(CALLS / 2),
        },
        ...(memory
          ? [
              { label: 'memory_get', baseline: noop, run: await sampler(memory.client, 'state_get', (i) => ({ key: key(i) })) },
              {
                label: 'memory_set',
                baseline: noop,
                run: await sampler(memory.client, 'state_set', (i) => ({ key: key(i), value: { n: i } })),
              },
            ]
          : []),
      ];
      out.latency = await rounds(ops);
      out.latency.rssMb = peakRssMb(s.pid);
      await s.close();
      await normal?.close();
      await memory?.close();
    }
  }

  // Cross-process watch wake-up: a watch in one process, a write in another after a random 5-45 ms pause.
  if (want('watch')) {
    log(`${store.name}: cross-process watch wake-up`);
    const url = store.url('watch');
    const a = await ours(url);
    const b = await ours(url);
    const afterReply = [];
    const afterSend = [];
    const trials = QUICK ? 20 : 200;
    for (let i = 0; i < trials + 5; i++) {
      const key = `w${i}`;
      let woke = 0;
      const waiting = call(a.client, 'watch', { key, waitMs: 10_000 }).then(() => (woke = performance.now()));
      await sleep(5 + Math.random() * 40);
      const sent = performance.now();
      await call(b.client, 'state_set', { key, value: i });
      const replied = performance.now();
      await waiting;
      if (i < 5) continue; // warm-up
      afterReply.push(woke - replied);
      afterSend.push(woke - sent);
    }
    out.watch = {
      afterReplyMs: r2(median(afterReply)),
      afterReplyP99Ms: r2(pct(afterReply, 99)),
      afterSendMs: r2(median(afterSend)),
      afterSendP99Ms: r2(pct(afterSend, 99)),
      trials,
    };
    await a.close();
    await b.close();
  }

  // Cross-process inbox wake-up: an inbox waiting in one process, a message_send in another after a random 5-45 ms pause.
  if (want('inbox')) {
    log(`${store.name}: cross-process inbox wake-up`);
    const url = store.url('inbox');
    const team = (name) => spawn(CLI, ['--store', url, '--agent', name, '--thread', name, '--tools', 'agent,team']);
    const a = await team('reader');
    const b = await team('sender');
    await call(a.client, 'whoami', {}); // on the roster
    const afterReply = [];
    const trials = QUICK ? 20 : 200;
    let cursor;
    for (let i = 0; i < trials + 5; i++) {
      let woke = 0;
      const waiting = call(a.client, 'inbox', { waitMs: 10_000, ...(cursor ? { ack: cursor } : {}) }).then((r) => {
        woke = performance.now();
        return r;
      });
      await sleep(5 + Math.random() * 40);
      await call(b.client, 'message_send', { to: 'reader', content: `m${i}` });
      const replied = performance.now();
      const got = await waiting;
      cursor = got.structuredContent.cursor;
      if (got.structuredContent.messages.length !== 1) throw new Error(`inbox woke with ${got.structuredContent.messages.length} messages`);
      if (i >= 5) afterReply.push(woke - replied);
    }
    out.inbox = { afterReplyMs: r2(median(afterReply)), afterReplyP99Ms: r2(pct(afterReply, 99)), trials };
    await a.close();
    await b.close();
  }

  // 8 processes x 4 in flight incrementing one key, against the same harness driving no-op servers.
  if (want('concurrency')) {
    log(`${store.name}: 8 processes x 4 in flight on one key, against 8 no-op servers`);
    const processes = 8;
    const lanes = 4;
    const per = QUICK ? 40 : 200; // calls per process per run
    const drive = async (servers, tool, argsOf) => {
      const t = performance.now();
      await Promise.all(
        servers.map(async (s) => {
          await Promise.all(
            Array.from({ length: lanes }, async () => {
              for (let i = 0; i < per / lanes; i++) await call(s.client, tool, argsOf());
            }),
          );
        }),
      );
      return (processes * per) / ((performance.now() - t) / 1000);
    };
    const url = store.url('concurrency');
    const servers = await Promise.all(Array.from({ length: processes }, () => ours(url)));
    const noops = await Promise.all(Array.from({ length: processes }, () => spawn(FLOOR, [])));
    const ratios = [];
    const ourOps = [];
    const ceilingOps = [];
    let exact = true;
    for (let r = 0; r < (QUICK ? 2 : 3); r++) {
      const ceiling = await drive(noops, 'noop', () => ({ key: 'k' }));
      const key = `hits-${r}`;
      const ops = await drive(servers, 'state_update', () => ({ key, op: 'increment', value: 1 }));
      const final = (await call(servers[0].client, 'state_get', { key })).structuredContent.value;
      if (final !== processes * per) exact = false;
      ratios.push(ops / ceiling);
      ourOps.push(ops);
      ceilingOps.push(ceiling);
    }
    out.concurrency = {
      opsPerSecond: Math.round(median(ourOps)),
      ceilingOpsPerSecond: Math.round(median(ceilingOps)),
      ratio: r2(median(ratios)),
      exact,
    };
    await Promise.all([...servers, ...noops].map((s) => s.close()));
  }

  // Scale: the same operations at growing sizes, each against the floor in interleaved rounds.
  out.scale = [];
  for (const n of want('scale') ? store.scales : []) {
    log(`${store.name}: scale, ${n} keys`);
    const url = store.url(`scale-${n}`);
    const t = performance.now();
    await fill(url, n);
    const fillSeconds = r2((performance.now() - t) / 1000);
    const s = await ours(url);
    const key = keyOf(n);
    const calls = Math.ceil(CALLS / 2);
    const m = await rounds(
      [
        { label: 'state_get', baseline: noop, run: await sampler(s.client, 'state_get', (i) => ({ key: key(i) })) },
        { label: 'state_set', baseline: noop, run: await sampler(s.client, 'state_set', (i) => ({ key: key(i), value: { n: i } })) },
        {
          label: 'state_update',
          baseline: noop,
          run: await sampler(s.client, 'state_update', () => ({ key: 'counter', op: 'increment', value: 1 })),
        },
        { label: 'state_list', baseline: noop, run: await sampler(s.client, 'state_list', () => ({ prefix: 'key/', limit: 100 })) },
      ],
      QUICK ? 3 : 5,
      calls,
    );
    out.scale.push({ keys: n, fillSeconds, rssMb: peakRssMb(s.pid), ...m });
    await s.close();
  }
}

// Peers: the same number of entries, their write and read tools against ours, interleaved.
for (const n of want('peers') ? PEER_SIZES : []) {
  log(`peers at ${n} entries: @modelcontextprotocol/server-memory, mcp-memory-keeper, ours`);
  // Both peers are filled by writing their own files directly (their write tools would take minutes at 50 k),
  // in the formats they write themselves: server-memory's JSONL lines, mcp-memory-keeper's context_items rows.
  const memFile = join(work, `server-memory-${n}.jsonl`);
  writeFileSync(
    memFile,
    Array.from({ length: n }, (_, i) =>
      JSON.stringify({ type: 'entity', name: `entity-${i}`, entityType: 'note', observations: ['some agent state'] }),
    ).join('\n'),
  );
  const mem = await spawn(SERVER_MEMORY, [], { MEMORY_FILE_PATH: memFile });
  const keeperDir = join(work, `memory-keeper-${n}`);
  mkdirSync(keeperDir);
  {
    const first = await spawn(MEMORY_KEEPER, [], { DATA_DIR: keeperDir });
    await call(first.client, 'context_save', { key: `key/${pad8(0)}`, value: 'some agent state', category: 'note' });
    await first.close();
    const db = new Database(join(keeperDir, 'context.db'));
    const session = db.prepare('SELECT session_id FROM context_items LIMIT 1').get().session_id;
    const insert = db.prepare(
      "INSERT INTO context_items(id, session_id, key, value, category, size) VALUES (?, ?, ?, 'some agent state', 'note', 16)",
    );
    db.transaction(() => {
      for (let i = 1; i < n; i++) insert.run(randomUUID(), session, `key/${pad8(i)}`);
    })();
    db.close();
  }
  const keeper = await spawn(MEMORY_KEEPER, [], { DATA_DIR: keeperDir });
  const url = stores[0].url(`peer-${n}`);
  await fill(url, n);
  const s = await ours(url);
  const calls = n >= 50_000 ? 10 : n >= 10_000 ? 30 : 100;
  const key = keyOf(n);
  const rows = {};
  const peerRounds = QUICK ? 3 : 5;
  let serial = 0;
  const ourWrite = await sampler(s.client, 'state_set', () => ({ key: `new-${serial++}`, value: 'x' }));
  const ourRead = await sampler(s.client, 'state_get', (i) => ({ key: key(i) }));
  const theirs = [
    [
      'server-memory write (create_entities, 1 entity)',
      ourWrite,
      await sampler(mem.client, 'create_entities', () => ({
        entities: [{ name: `new-${serial++}`, entityType: 'note', observations: ['x'] }],
      })),
    ],
    [
      'server-memory read (open_nodes, 1 entity)',
      ourRead,
      await sampler(mem.client, 'open_nodes', (i) => ({ names: [`entity-${(i * 7919) % n}`] })),
    ],
    [
      'mcp-memory-keeper write (context_save)',
      ourWrite,
      await sampler(keeper.client, 'context_save', () => ({ key: `new-${serial++}`, value: 'x', category: 'note' })),
    ],
    ['mcp-memory-keeper read (context_get by key)', ourRead, await sampler(keeper.client, 'context_get', (i) => ({ key: key(i) }))],
  ];
  // ratio = theirs / ours: how many times faster we are
  const m = await rounds(
    theirs.map(([label, mine, run]) => ({ label, baseline: mine, run })),
    peerRounds,
    calls,
  );
  for (const [label] of theirs) rows[label] = { speedup: m[label].ratio, theirsMs: m[label].ms, oursMs: m[label].baseMs };
  results.peers.push({ entries: n, ...rows });
  await Promise.all([mem.close(), keeper.close(), s.close()]);
}
await floor.close();
fsync.close();

// --- the report ------------------------------------------------------------------------------------------------------
const names = stores.map((s) => s.name);
const cell = (value, met) => (value === undefined ? 'n/a' : `${value} ${met ? 'met' : 'MISSED'}`);
// rows whose function returns undefined for a store print n/a (e.g. --sync is SQLite's only)
const table = [];
// a section that was not run (BENCH_ONLY) prints n/a
const safe = (fn) => {
  try {
    return fn();
  } catch {
    return undefined;
  }
};
const row = (figure, target, fn) => table.push([figure, target, ...names.map((n) => safe(() => fn(results.stores[n], n)) ?? 'n/a')]);
const fsyncMedian = r3(median(fsyncMs));
row('state_get / floor', '<= 1.2x', (s) =>
  cell(`${s.latency.state_get.ratio}x (${s.latency.state_get.ms} ms)`, s.latency.state_get.ratio <= 1.2),
);
row('durable state_set / (floor + fdatasync)', '<= 1.25x', (s, n) =>
  n === 'sqlite' ? cell(`${s.latency.state_set.ratio}x (${s.latency.state_set.ms} ms)`, s.latency.state_set.ratio <= 1.25) : undefined,
);
row('shared-store state_set / floor', 'info', (s, n) =>
  n === 'sqlite' ? undefined : `${s.latency.state_set.ratio}x (${s.latency.state_set.ms} ms)`,
);
row('--sync normal state_set / floor', '<= 1.5x', (s, n) =>
  n === 'sqlite'
    ? cell(`${s.latency.state_set_normal.ratio}x (${s.latency.state_set_normal.ms} ms)`, s.latency.state_set_normal.ratio <= 1.5)
    : undefined,
);
row('memory:// state_get / floor (tools alone)', 'info', (s, n) =>
  n === 'sqlite' ? `${s.latency.memory_get.ratio}x (${s.latency.memory_get.ms} ms)` : undefined,
);
row('memory:// state_set / floor (tools alone)', 'info', (s, n) =>
  n === 'sqlite' ? `${s.latency.memory_set.ratio}x (${s.latency.memory_set.ms} ms)` : undefined,
);
row('state_update increment / floor', 'info', (s) => `${s.latency.state_update.ratio}x (${s.latency.state_update.ms} ms)`);
row('state_list 100 / floor', 'info', (s) => `${s.latency.state_list.ratio}x (${s.latency.state_list.ms} ms)`);
row('watch wake-up after the write reply, p50 / p99', '<= 5 ms p99', (s) =>
  cell(`${s.watch.afterReplyMs} / ${s.watch.afterReplyP99Ms} ms`, s.watch.afterReplyP99Ms <= 5),
);
row('inbox wake-up after the send reply, p50 / p99', '<= 5 / 50 ms', (s) =>
  s.inbox
    ? cell(`${s.inbox.afterReplyMs} / ${s.inbox.afterReplyP99Ms} ms`, s.inbox.afterReplyMs <= 5 && s.inbox.afterReplyP99Ms <= 50)
    : undefined,
);
row('8 procs x 4 in flight, one key / no-op ceiling', '>= 0.25x, exact', (s) =>
  cell(
    `${s.concurrency.ratio}x (${s.concurrency.opsPerSecond} of ${s.concurrency.ceilingOpsPerSecond} ops/s)${s.concurrency.exact ? ', exact' : ', LOST UPDATES'}`,
    s.concurrency.ratio >= 0.25 && s.concurrency.exact,
  ),
);
for (const op of ['state_get', 'state_set', 'state_update', 'state_list']) {
  row(`scale growth ${op} (ratio to floor)`, '<= 1.5x', (s) => {
    const first = s.scale[0];
    const last = s.scale[s.scale.length - 1];
    const growth = r2(last[op].ratio / first[op].ratio);
    return cell(`${growth}x (${first.keys} -> ${last.keys})`, growth <= 1.5);
  });
}
row('scale peak RSS', '<= 200 MB', (s) => {
  const peak = Math.max(...s.scale.map((x) => x.rssMb));
  return cell(`${peak} MB (at ${s.scale[s.scale.length - 1].keys})`, peak <= 200);
});

const lines = [];
lines.push(
  `mcp-blackboard benchmark (${QUICK ? 'quick' : 'full'}): node ${process.version}, ${cpus().length} CPUs; medians of per-round ratios, ${ROUNDS} interleaved rounds of ${CALLS} calls`,
);
lines.push(
  `floor = the SDK's own stdio server with one no-op tool: ${results.stores.sqlite.latency?.state_get.baseMs ?? 'n/a'} ms per call; one fdatasync on the store's disk: ${fsyncMedian} ms`,
);
lines.push('');
const widths = [48, 18, ...names.map(() => 44)];
const fmt = (cols) =>
  cols
    .map((c, i) => String(c).padEnd(widths[i]))
    .join(' ')
    .trimEnd();
lines.push(fmt(['figure', 'target', ...names]));
for (const r of table) lines.push(fmt(r));
lines.push('');
for (const n of names) {
  lines.push(`scale (${n}): median ms per call, ratio to the floor in the same rounds`);
  for (const s of results.stores[n].scale) {
    lines.push(
      `  ${String(s.keys).padStart(9)} keys: get ${s.state_get.ms} ms (${s.state_get.ratio}x), set ${s.state_set.ms} ms (${s.state_set.ratio}x), update ${s.state_update.ms} ms (${s.state_update.ratio}x), list ${s.state_list.ms} ms (${s.state_list.ratio}x); peak RSS ${s.rssMb} MB; fill ${s.fillSeconds} s`,
    );
  }
}
lines.push('');
lines.push('peers (target: ours faster at every size): their median / ours (durable state_set for writes, state_get for reads)');
let peersMet = true;
for (const p of results.peers) {
  for (const [label, v] of Object.entries(p)) {
    if (label === 'entries') continue;
    if (!(v.speedup > 1)) peersMet = false;
    lines.push(
      `  ${String(p.entries).padStart(6)} entries, ${label.padEnd(50)} theirs ${String(v.theirsMs).padStart(8)} ms, ours ${String(v.oursMs).padStart(6)} ms -> ${v.speedup}x ${v.speedup > 1 ? 'met' : 'MISSED'}`,
    );
  }
}
if (results.peers.length > 0) lines.push(`peers: ${peersMet ? 'met' : 'MISSED'}`);
results.table = table;
results.fdatasyncMs = fsyncMedian;
console.log(lines.join('\n'));
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(join(here, 'results', 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log('\nwrote bench/results/latest.json');
for (const handle of [...running]) await handle.close().catch(() => {});
rmSync(work, { recursive: true, force: true });
if (Object.values(results.stores).some((s) => s.concurrency && !s.concurrency.exact)) {
  console.error('LOST UPDATES: a final count is not exact');
  process.exit(1);
}
