// node bench/cpu-per-call.mjs: per call, each server's CPU time (user + system, from /proc), the client's, and the
// median round trip, for the SDK's no-op floor, the floor over this server's stdio transport and our servers, in
// rounds (medians of per-round figures; CPU_ALTERNATE=1 interleaves every case call by call, as npm run bench does).
// CPU time is what a loaded, shared machine disturbs least. CPU_ONLY=label,... picks cases. Not part of npm test; Linux.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const here = fileURLToPath(new URL('.', import.meta.url));
const CLI = join(here, '..', 'dist', 'cli.js');
const ROUNDS = Number(process.env.CPU_ROUNDS ?? 7);
const CALLS = Number(process.env.CPU_CALLS ?? 2000);
const work = mkdtempSync(join(tmpdir(), 'bb-cpu-'));
const TICK_US = 1e6 / 100; // USER_HZ: /proc counts CPU time in ticks of 10 ms

async function spawn(script, args) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [script, ...args], stderr: 'ignore' });
  const client = new Client({ name: 'cpu', version: '1.0.0' });
  await client.connect(transport);
  return { client, pid: transport.pid };
}
const cpuUs = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_US;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];

const get = (i) => ({ key: `key/${i % 1000}` });
const set = (i) => ({ key: `key/${i % 1000}`, value: { n: i, text: 'updated state' } });
const only = process.env.CPU_ONLY?.split(',');
const cases = [
  { label: 'floor noop', script: join(here, 'floor-server.mjs'), args: [], tool: 'noop', argsOf: get },
  { label: 'floor via our transport', script: join(here, 'floor-transport-server.mjs'), args: [], tool: 'noop', argsOf: get },
  { label: 'memory state_get', script: CLI, args: ['--store', 'memory://', '--agent', 'bench'], tool: 'state_get', argsOf: get },
  // CPU_COMPARE=path/to/other/dist/cli.js: the same call on another build (e.g. a copy of dist/ with one part cut out)
  ...(process.env.CPU_COMPARE
    ? [
        {
          label: 'memory state_get, compared build',
          script: process.env.CPU_COMPARE,
          args: ['--store', 'memory://', '--agent', 'bench'],
          tool: 'state_get',
          argsOf: get,
        },
      ]
    : []),
  { label: 'memory state_set', script: CLI, args: ['--store', 'memory://', '--agent', 'bench'], tool: 'state_set', argsOf: set },
  {
    label: 'sqlite state_get',
    script: CLI,
    args: ['--store', `sqlite://${join(work, 'a.db')}`, '--agent', 'bench'],
    tool: 'state_get',
    argsOf: get,
  },
  {
    label: 'sqlite normal state_set',
    script: CLI,
    args: ['--store', `sqlite://${join(work, 'b.db')}`, '--agent', 'bench', '--sync', 'normal'],
    tool: 'state_set',
    argsOf: set,
  },
  {
    label: 'sqlite full state_set',
    script: CLI,
    args: ['--store', `sqlite://${join(work, 'c.db')}`, '--agent', 'bench'],
    tool: 'state_set',
    argsOf: set,
  },
].filter((c) => !only || only.some((o) => c.label.includes(o)));
for (const c of cases) {
  c.server = await spawn(c.script, c.args);
  if (c.tool === 'state_get') for (let i = 0; i < 1000; i++) await c.server.client.callTool({ name: 'state_set', arguments: set(i) });
  for (let i = 0; i < 500; i++) await c.server.client.callTool({ name: c.tool, arguments: c.argsOf(i) });
  c.cpu = [];
  c.client = [];
  c.wall = [];
}
// CPU_ALTERNATE=1: call by call, a call to the floor, then one to each case (as npm run bench times them), so every
// call finds its server cold and every case sees the same moment of the machine; otherwise each case runs its calls
// in a block (its server stays warm).
const ALTERNATE = process.env.CPU_ALTERNATE === '1';
const floorCase = cases.find((c) => c.label === 'floor noop');
const one = async (c, i) => {
  const u = process.cpuUsage();
  const t = performance.now();
  const res = await c.server.client.callTool({ name: c.tool, arguments: c.argsOf(i) });
  const wall = performance.now() - t;
  const du = process.cpuUsage(u);
  if (res.isError) throw new Error(res.content[0].text);
  return { wall, client: du.user + du.system };
};
const groups = ALTERNATE ? [cases] : cases.map((c) => [c]);
for (let r = 0; r < ROUNDS; r++) {
  for (const group of groups) {
    const before = group.map((c) => cpuUs(c.server.pid));
    const walls = group.map(() => []);
    const client = group.map(() => 0);
    for (let i = 0; i < CALLS; i++) {
      for (const [k, c] of group.entries()) {
        const { wall, client: u } = await one(c, i);
        walls[k].push(wall * 1000);
        client[k] += u;
      }
    }
    for (const [k, c] of group.entries()) {
      c.cpu.push((cpuUs(c.server.pid) - before[k]) / CALLS);
      c.wall.push(median(walls[k]));
      c.client.push(client[k] / CALLS);
    }
  }
}
for (const c of cases) {
  const cpu = median(c.cpu);
  const wall = median(c.wall);
  // ratios: the median of per-round ratios to the floor, as npm run bench reports them
  const ratio = (xs, fs) => median(xs.map((x, r) => x / fs[r]));
  const fCpu = floorCase ? median(floorCase.cpu) : undefined;
  const fWall = floorCase ? median(floorCase.wall) : undefined;
  console.log(
    `${c.label.padEnd(26)} server CPU ${cpu.toFixed(0).padStart(4)} µs/call${fCpu ? ` (${ratio(c.cpu, floorCase.cpu).toFixed(2)}x the floor's)` : ''}; client CPU ${median(c.client).toFixed(0)} µs; median round trip ${wall.toFixed(0)} µs${fWall ? ` (${ratio(c.wall, floorCase.wall).toFixed(2)}x the floor's ${fWall.toFixed(0)})` : ''}`,
  );
  await c.server.client.close();
}
