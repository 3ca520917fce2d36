// npm run bench: every figure is a ratio against a baseline measured in this same run (medians; the machine is
// noisy). Prints a table and writes bench/results/latest.json. Not part of npm test.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { SqliteBackend } from '../dist/store/sqlite.js';
import { VersionedStore } from '../dist/store/versioned-store.js';
import { storageKey } from '../dist/store/keys.js';
import { createServer } from '../dist/server.js';
import { defaultConfig } from '../dist/config.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const CLI = join(here, '..', 'dist', 'cli.js');
const FLOOR = join(here, 'floor-server.mjs');
const PEER = join(here, '..', 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');
const QUICK = process.env.BENCH_QUICK === '1';
const SCALES = QUICK ? [1_000, 10_000] : [1_000, 100_000, 1_000_000];
const PEER_SIZES = QUICK ? [1_000] : [1_000, 10_000, 50_000];
const CALLS = QUICK ? 300 : 2000;
const work = mkdtempSync(join(tmpdir(), 'bb-bench-'));
const results = { machine: { node: process.version, cpus: (await import('node:os')).cpus().length }, floor: {}, ours: {}, scale: [], peer: [], concurrency: {}, watch: {} };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const r2 = (x) => Math.round(x * 100) / 100;
const r3 = (x) => Math.round(x * 1000) / 1000;
const log = (...a) => console.error('[bench]', ...a);

async function spawn(command, args, env = {}) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [command, ...args], env: { ...process.env, ...env }, stderr: 'ignore' });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return { client, pid: transport.pid, close: () => client.close() };
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name}: ${r.content[0].text}`);
  return r;
}

/** Median milliseconds of `n` sequential calls after `warm` unmeasured ones. */
async function timeCalls(client, name, argsOf, n = CALLS, warm = Math.min(200, n)) {
  for (let i = 0; i < warm; i++) await call(client, name, argsOf(i));
  const times = [];
  for (let i = 0; i < n; i++) {
    const args = argsOf(warm + i);
    const t = performance.now();
    await call(client, name, args);
    times.push(performance.now() - t);
  }
  return median(times);
}

function peakRssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return r2(kb / 1024);
}

/** Fills a SQLite store with `n` keys in the global scope through the store API (not MCP), in big transactions. */
async function fill(path, n) {
  const store = new VersionedStore(await SqliteBackend.open(path, { synchronous: 'NORMAL' }), { sweepIntervalMs: 0 });
  const now = Date.now();
  for (let i = 0; i < n; i += 10_000) {
    await store.transact(async (tx) => {
      for (let j = i; j < Math.min(n, i + 10_000); j++) {
        tx.putEntry(storageKey('d', '-', 'global', `key/${String(j).padStart(8, '0')}`), { value: { n: j, text: 'some agent state' }, version: 1, updatedAt: now, updatedBy: 'bench' });
      }
      return {};
    });
  }
  await store.close();
}

/** The four measured operations against our server on `path`, as medians in ms. */
async function measureOurs(path, n, calls = CALLS) {
  const s = await spawn(CLI, ['--store', `sqlite://${path}`, '--agent', 'bench']);
  const key = (i) => `key/${String((i * 7919) % n).padStart(8, '0')}`;
  const out = {
    state_get: await timeCalls(s.client, 'state_get', (i) => ({ key: key(i) }), calls),
    state_set: await timeCalls(s.client, 'state_set', (i) => ({ key: key(i), value: { n: i, text: 'updated state' } }), calls),
    state_update: await timeCalls(s.client, 'state_update', () => ({ key: 'counter', op: 'increment', value: 1 }), calls),
    state_list: await timeCalls(s.client, 'state_list', (i) => ({ prefix: 'key/', limit: 100, ...(i % 2 ? {} : {}) }), Math.min(calls, 500)),
  };
  out.rssMb = peakRssMb(s.pid);
  await s.close();
  return out;
}

// --- floor and ours ---------------------------------------------------------------------------------------------
log('floor: SDK server with one no-op tool');
{
  const floor = await spawn(FLOOR, []);
  results.floor.noop = await timeCalls(floor.client, 'noop', (i) => ({ key: `k${i}` }));
  results.floor.rssMb = peakRssMb(floor.pid);
  await floor.close();
}

// --- scale (the smallest size is also the headline comparison with the floor) -------------------------------------
for (const n of SCALES) {
  log(`scale: ${n} keys (fill through the store API)`);
  const path = join(work, `scale-${n}.db`);
  const t = performance.now();
  await fill(path, n);
  const fillSeconds = r2((performance.now() - t) / 1000);
  const m = await measureOurs(path, n, n >= 1_000_000 ? Math.min(CALLS, 1000) : CALLS);
  results.scale.push({ keys: n, fillSeconds, ...Object.fromEntries(Object.entries(m).map(([k, v]) => [k, k === 'rssMb' ? v : r3(v)])) });
  rmSync(path, { force: true });
}
results.ours = results.scale[0];
{
  log('state_set with --sync normal (survives kill -9, not power loss)');
  const path = join(work, 'normal.db');
  await fill(path, SCALES[0]);
  const s = await spawn(CLI, ['--store', `sqlite://${path}`, '--sync', 'normal']);
  results.ours.state_set_sync_normal = r3(await timeCalls(s.client, 'state_set', (i) => ({ key: `key/${String(i % SCALES[0]).padStart(8, '0')}`, value: { n: i } })));
  await s.close();
}

// --- peer: @modelcontextprotocol/server-memory -------------------------------------------------------------------
for (const n of PEER_SIZES) {
  log(`peer: server-memory vs ours at ${n} entries`);
  const file = join(work, `memory-${n}.jsonl`);
  const peer = await spawn(PEER, [], { MEMORY_FILE_PATH: file });
  for (let i = 0; i < n; i += 1000) {
    const entities = Array.from({ length: Math.min(1000, n - i) }, (_, j) => ({ name: `entity-${i + j}`, entityType: 'note', observations: ['some agent state'] }));
    await call(peer.client, 'create_entities', { entities });
  }
  const peerCalls = n >= 50_000 ? 20 : n >= 10_000 ? 50 : 200;
  const theirs = await timeCalls(peer.client, 'create_entities', (i) => ({ entities: [{ name: `new-${i}`, entityType: 'note', observations: ['x'] }] }), peerCalls, 5);
  await peer.close();
  const path = join(work, `peer-${n}.db`);
  await fill(path, n);
  const s = await spawn(CLI, ['--store', `sqlite://${path}`]);
  const ours = await timeCalls(s.client, 'state_set', (i) => ({ key: `new-${i}`, value: { entityType: 'note', observations: ['x'] } }), 300, 50);
  await s.close();
  results.peer.push({ entries: n, serverMemoryWriteMs: r2(theirs), oursWriteMs: r2(ours), speedup: r2(theirs / ours) });
}

// --- concurrency: 8 processes on one SQLite file -----------------------------------------------------------------
async function concurrent(processes, perProcess, keyOf) {
  const path = join(work, `conc-${processes}-${Math.random().toString(36).slice(2)}.db`);
  const servers = await Promise.all(Array.from({ length: processes }, () => spawn(CLI, ['--store', `sqlite://${path}`])));
  const t = performance.now();
  await Promise.all(servers.map(async (s, p) => {
    const lanes = 4;
    await Promise.all(Array.from({ length: lanes }, async () => {
      for (let i = 0; i < perProcess / lanes; i++) await call(s.client, 'state_update', { key: keyOf(p), op: 'increment', value: 1 });
    }));
  }));
  const seconds = (performance.now() - t) / 1000;
  let total = 0;
  for (let p = 0; p < processes; p++) {
    if (p > 0 && keyOf(p) === keyOf(0)) continue;
    const r = await call(servers[0].client, 'state_get', { key: keyOf(p) });
    total += r.structuredContent.value;
  }
  await Promise.all(servers.map((s) => s.close()));
  return { opsPerSecond: Math.round((processes * perProcess) / seconds), finalCount: total, expected: processes * perProcess };
}
log('concurrency: 1 and 8 processes, one key and distinct keys');
{
  const per = QUICK ? 100 : 400;
  const base = await concurrent(1, per * 8, () => 'hits');
  const oneKey = await concurrent(8, per, () => 'hits');
  const distinct = await concurrent(8, per, (p) => `hits-${p}`);
  results.concurrency = {
    baseline1Process: base,
    eightProcessesOneKey: { ...oneKey, ratioToOneProcess: r2(oneKey.opsPerSecond / base.opsPerSecond) },
    eightProcessesDistinctKeys: { ...distinct, ratioToOneProcess: r2(distinct.opsPerSecond / base.opsPerSecond) },
  };
}

// --- watch wake-up latency -----------------------------------------------------------------------------------------
log('watch: wake-up latency, in-process and across processes');
async function wakeLatency(watcher, writer, trials) {
  const times = [];
  for (let i = 0; i < trials; i++) {
    const key = `w${i}`;
    const waiting = call(watcher, 'watch', { key, timeoutMs: 10_000 });
    await new Promise((r) => setTimeout(r, 20));
    const t = performance.now();
    await call(writer, 'state_set', { key, value: i });
    await waiting;
    times.push(performance.now() - t);
  }
  return median(times);
}
{
  const trials = QUICK ? 20 : 60;
  // in-process: two MCP connections to one store in this process
  const store = new VersionedStore(await SqliteBackend.open(join(work, 'watch-local.db')), { sweepIntervalMs: 0 });
  const connectLocal = async () => {
    const bb = await createServer(defaultConfig(), store);
    const [c, s] = InMemoryTransport.createLinkedPair();
    const client = new Client({ name: 'w', version: '1' });
    await Promise.all([bb.server.connect(s), client.connect(c)]);
    return client;
  };
  const [w1, w2] = [await connectLocal(), await connectLocal()];
  const setOnly = await timeCalls(w2, 'state_set', (i) => ({ key: `plain${i}`, value: i }), trials, 10);
  const local = await wakeLatency(w1, w2, trials);
  await store.close();
  // across processes on one SQLite file
  const path = join(work, 'watch-remote.db');
  const a = await spawn(CLI, ['--store', `sqlite://${path}`]);
  const b = await spawn(CLI, ['--store', `sqlite://${path}`]);
  const remoteSet = await timeCalls(b.client, 'state_set', (i) => ({ key: `plain${i}`, value: i }), trials, 10);
  const remote = await wakeLatency(a.client, b.client, trials);
  await a.close();
  await b.close();
  results.watch = {
    inProcessMs: r2(local), inProcessSetMs: r2(setOnly), inProcessRatioToSet: r2(local / setOnly),
    crossProcessMs: r2(remote), crossProcessSetMs: r2(remoteSet), crossProcessRatioToSet: r2(remote / remoteSet),
  };
}

// --- report ---------------------------------------------------------------------------------------------------------
const floor = results.floor.noop;
const ours = results.ours;
const first = results.scale[0];
const last = results.scale[results.scale.length - 1];
const ratios = {
  state_get: r2(ours.state_get / floor),
  state_set_durable: r2(ours.state_set / floor),
  state_update: r2(ours.state_update / floor),
  state_list_100: r2(ours.state_list / floor),
};
const growth = Object.fromEntries(['state_get', 'state_set', 'state_update', 'state_list'].map((op) => [op, r2(last[op] / first[op])]));
results.ratios = { vsFloor: ratios, growth: { from: first.keys, to: last.keys, ...growth } };
const rows = [
  ['floor (SDK no-op tool, stdio)', `${r2(floor)} ms`, '1.00x', ''],
  ['state_get', `${r2(ours.state_get)} ms`, `${ratios.state_get}x`, 'target <= 1.5x'],
  ['state_set (durable, fsync)', `${r2(ours.state_set)} ms`, `${ratios.state_set_durable}x`, 'target <= 2.5x'],
  ['state_set (--sync normal)', `${r2(ours.state_set_sync_normal)} ms`, `${r2(ours.state_set_sync_normal / floor)}x`, ''],
  ['state_update increment', `${r2(ours.state_update)} ms`, `${ratios.state_update}x`, ''],
  ['state_list (page of 100)', `${r2(ours.state_list)} ms`, `${ratios.state_list_100}x`, ''],
];
const lines = ['', `Latency medians, ${CALLS} sequential calls each (${first.keys} keys), ratio to the protocol floor:`, ...rows.map((r) => `  ${r[0].padEnd(32)} ${r[1].padStart(10)} ${r[2].padStart(8)}  ${r[3]}`)];
lines.push('', `Scale (fill through the store API; ratio = median at ${last.keys} / at ${first.keys}, target <= 1.5x; peak RSS target <= 200 MB):`);
for (const s of results.scale) lines.push(`  ${String(s.keys).padStart(9)} keys: get ${s.state_get} ms, set ${s.state_set} ms, update ${s.state_update} ms, list ${s.state_list} ms, peak RSS ${s.rssMb} MB (fill ${s.fillSeconds} s)`);
lines.push(`  growth ${first.keys} -> ${last.keys}: get ${growth.state_get}x, set ${growth.state_set}x, update ${growth.state_update}x, list ${growth.state_list}x`);
lines.push('', 'Peer: @modelcontextprotocol/server-memory create_entities (1 entity) vs our state_set, same number of entries (target >= 100x at 10k):');
for (const p of results.peer) lines.push(`  ${String(p.entries).padStart(6)} entries: server-memory ${p.serverMemoryWriteMs} ms, ours ${p.oursWriteMs} ms -> ${p.speedup}x faster`);
const c = results.concurrency;
lines.push('', 'Concurrency: state_update increment, 4 in flight per process, ratio to 1 process doing the same total:');
lines.push(`  1 process:              ${c.baseline1Process.opsPerSecond} ops/s, final ${c.baseline1Process.finalCount}/${c.baseline1Process.expected}`);
lines.push(`  8 processes, one key:   ${c.eightProcessesOneKey.opsPerSecond} ops/s (${c.eightProcessesOneKey.ratioToOneProcess}x), final ${c.eightProcessesOneKey.finalCount}/${c.eightProcessesOneKey.expected}`);
lines.push(`  8 processes, own keys:  ${c.eightProcessesDistinctKeys.opsPerSecond} ops/s (${c.eightProcessesDistinctKeys.ratioToOneProcess}x), final ${c.eightProcessesDistinctKeys.finalCount}/${c.eightProcessesDistinctKeys.expected}`);
const w = results.watch;
lines.push('', 'Watch wake-up latency (write sent -> watch returned), ratio to a plain state_set round trip:');
lines.push(`  in-process:    ${w.inProcessMs} ms (${w.inProcessRatioToSet}x of ${w.inProcessSetMs} ms)`);
lines.push(`  cross-process: ${w.crossProcessMs} ms (${w.crossProcessRatioToSet}x of ${w.crossProcessSetMs} ms; includes the 25 ms commit poll)`);
console.log(lines.join('\n'));
mkdirSync(join(here, 'results'), { recursive: true });
writeFileSync(join(here, 'results', 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log(`\nwrote bench/results/latest.json`);
rmSync(work, { recursive: true, force: true });
const exact = [c.baseline1Process, c.eightProcessesOneKey, c.eightProcessesDistinctKeys].every((x) => x.finalCount === x.expected);
if (!exact) {
  console.error('LOST UPDATES: a final count is not exact');
  process.exit(1);
}
