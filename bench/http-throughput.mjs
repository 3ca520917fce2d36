// HTTP throughput: 64 concurrent 2026-07-28 clients (stateless) doing state_get and state_set, half each, against one
// server on a SQLite file, against the same clients calling the SDK's own no-op HTTP server (bench/floor-http-server.mjs)
// in interleaved rounds of the same length. Prints one JSON line: ops/s of each and the median of the per-round ratios.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const here = import.meta.dirname;
const CLIENTS = Number(process.env.CLIENTS ?? 64);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const ROUND_MS = Number(process.env.ROUND_MS ?? 2000);
const GOAL = 0.5;
const dir = mkdtempSync(join(tmpdir(), 'bb-http-bench-'));

/** Starts a server process and resolves with its MCP URL (the first http URL on its stderr). */
const start = (args) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => {
      err += c;
      const m = /(http:\/\/\S+\/mcp)/.exec(err);
      if (m) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
const ours = await start([join(here, '..', 'dist', 'cli.js'), '--http', '0', '--store', `sqlite://${join(dir, 'bench.db')}`]);
const floor = await start([join(here, 'floor-http-server.mjs')]);

const connect = async (url) => {
  const client = new Client({ name: 'bench', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
};
const oursClients = await Promise.all(Array.from({ length: CLIENTS }, () => connect(ours.url)));
const floorClients = await Promise.all(Array.from({ length: CLIENTS }, () => connect(floor.url)));

/** The i-th call of client c: state_get and state_set in turn (on the floor, the no-op tool with the same arguments). */
const call = (target, client, c, i) => {
  const key = `k${c % 16}`;
  const args = i % 2 === 0 ? { key } : { key, value: { n: i, by: c } };
  if (target === 'floor') return client.callTool({ name: 'noop', arguments: args });
  return client.callTool({ name: i % 2 === 0 ? 'state_get' : 'state_set', arguments: args });
};
/** Every client calls in a loop for `ms`; resolves with completed calls per second. */
const round = async (target, clients, ms) => {
  const until = performance.now() + ms;
  let done = 0;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client, c) => {
      for (let i = 0; performance.now() < until; i++) {
        const result = await call(target, client, c, i);
        if (result.isError) throw new Error(`call failed: ${JSON.stringify(result.content)}`);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
};

await round('ours', oursClients, 500); // warm up both
await round('floor', floorClients, 500);
const oursRates = [];
const floorRates = [];
const ratios = [];
for (let r = 0; r < ROUNDS; r++) {
  // alternate which goes first, so neither always follows the other
  const [a, b] = r % 2 === 0 ? ['ours', 'floor'] : ['floor', 'ours'];
  const rates = {};
  rates[a] = await round(a, a === 'ours' ? oursClients : floorClients, ROUND_MS);
  rates[b] = await round(b, b === 'ours' ? oursClients : floorClients, ROUND_MS);
  oursRates.push(rates.ours);
  floorRates.push(rates.floor);
  ratios.push(rates.ours / rates.floor);
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
const ratio = median(ratios);
console.log(
  JSON.stringify({
    clients: CLIENTS,
    oursOpsPerSec: Math.round(median(oursRates)),
    floorOpsPerSec: Math.round(median(floorRates)),
    ratio: Number(ratio.toFixed(2)),
    goal: GOAL,
    met: ratio >= GOAL,
  }),
);
await Promise.all([...oursClients, ...floorClients].map((c) => c.close().catch(() => {})));
ours.child.kill();
floor.child.kill();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
