// node bench/profile.mjs TOOL [server flags...]: a CPU profile of one server process under a loop of calls to TOOL
// (state_get, state_set or noop against the floor), then the functions with the most self time and the inclusive time
// of the call path's parts. Not part of npm test or npm run bench; for finding where a call's time goes.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const here = fileURLToPath(new URL('.', import.meta.url));
const [tool = 'state_get', ...flags] = process.argv.slice(2);
const CALLS = Number(process.env.PROFILE_CALLS ?? 20_000);
const dir = mkdtempSync(join(tmpdir(), 'bb-prof-'));
const script = tool === 'noop' ? join(here, 'floor-server.mjs') : join(here, '..', 'dist', 'cli.js');
const args = tool === 'noop' ? [] : flags.length ? flags : ['--store', 'memory://', '--agent', 'bench'];
const transport = new StdioClientTransport({
  command: process.execPath,
  args: ['--cpu-prof', `--cpu-prof-dir=${dir}`, script, ...args],
  stderr: 'inherit',
});
const client = new Client({ name: 'profile', version: '1.0.0' });
await client.connect(transport);
const argsOf = (i) =>
  tool === 'state_set' ? { key: `key/${i % 1000}`, value: { n: i, text: 'updated state' } } : { key: `key/${i % 1000}` };
// PROFILE_ALTERNATE=1: every call alternates with a call to the floor server (as npm run bench times them)
let floor;
if (process.env.PROFILE_ALTERNATE === '1') {
  floor = new Client({ name: 'profile', version: '1.0.0' });
  await floor.connect(new StdioClientTransport({ command: process.execPath, args: [join(here, 'floor-server.mjs')] }));
}
for (let i = 0; i < 1000; i++) await client.callTool({ name: tool, arguments: argsOf(i) });
// only samples taken during the measured calls count (both processes read the same monotonic clock)
const from = Number(process.hrtime.bigint() / 1000n);
let wall = 0;
for (let i = 0; i < CALLS; i++) {
  if (floor) await floor.callTool({ name: 'noop', arguments: {} });
  const t = performance.now();
  const r = await client.callTool({ name: tool, arguments: argsOf(i) });
  wall += performance.now() - t;
  if (r.isError) throw new Error(r.content[0].text);
}
const to = Number(process.hrtime.bigint() / 1000n);
const perCall = wall / CALLS;
await client.close();
await floor?.close();
await new Promise((r) => setTimeout(r, 500));
const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
// self time per node from the samples
const dt = new Map();
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0;
  if (at >= from && at <= to) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n) => {
  const f = n.callFrame;
  const url = f.url.replace(/^.*node_modules\//, '').replace(/^.*\/dist\//, 'dist/');
  return `${f.functionName || '(anon)'} ${url}:${f.lineNumber + 1}`;
};
const self = new Map();
const incl = new Map();
let total = 0;
for (const [id, us] of dt) {
  total += us;
  const n = byId.get(id);
  self.set(label(n), (self.get(label(n)) ?? 0) + us);
  const seen = new Set();
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const l = label(byId.get(x));
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + us);
  }
}
const us = (v) => `${((v / CALLS) | 0).toString().padStart(4)} µs/call`;
console.log(`${tool} ${args.join(' ')}: ${(perCall * 1000).toFixed(0)} µs per call round trip; profile ${(total / 1e3) | 0} ms`);
console.log('--- self time');
for (const [l, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.PROFILE_TOP ?? 30))) console.log(us(v), l);
console.log('--- inclusive (dist/ and SDK)');
for (const [l, v] of [...incl]
  .sort((a, b) => b[1] - a[1])
  .filter(([l]) => /dist\/|modelcontextprotocol/.test(l))
  .slice(0, Number(process.env.PROFILE_TOP ?? 40)))
  console.log(us(v), l);
console.log(`profile: ${join(dir, file)}`);
