// Memory of one HTTP server: RSS growth under 1,000 concurrent 2026-07-28 clients doing state_get (stateless: no
// session is kept), beside the SDK's own no-op HTTP server (bench/floor-http-server.mjs) under the same load, in
// alternating rounds, each on a fresh process; and growth with 1,000 idle 2025-11-25 sessions. Prints one JSON line
// with each figure (medians), its bound and whether it was met.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const here = import.meta.dirname;
const N = Number(process.env.CLIENTS ?? 1000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const MODERN_MAX_MB = 64;
const LEGACY_MAX_MB = 200;
const OURS = [join(here, '..', 'dist', 'cli.js'), '--http', '0', '--store', 'memory://', '--max-sessions', String(N + 10)];
const FLOOR = [join(here, 'floor-http-server.mjs')];

// a background stream the SDK client keeps may break under this load; that is not a failure of a measured call
process.on('unhandledRejection', (error) => console.error('background client error:', error?.message ?? error));

/** A server process, its URL, and its RSS sampled every 20 ms (`peak` since the last `reset`). */
async function serve(args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (c) => {
      err += c;
      const m = /(http:\/\/\S+\/mcp)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
  const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024;
  const server = { url, rssMb, peak: 0, base: 0 };
  const sampler = setInterval(() => (server.peak = Math.max(server.peak, rssMb())), 20);
  server.reset = () => (server.base = server.peak = rssMb());
  server.stop = () => {
    clearInterval(sampler);
    child.removeAllListeners('exit');
    child.kill();
  };
  return server;
}

/** a client of `era`, connected (retried: under this load a kept-alive socket may be closed as it is reused) */
const connect = async (url, era) => {
  for (let attempt = 1; ; attempt++) {
    const client = new Client(
      { name: 'mem', version: '1' },
      era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {},
    );
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      return client;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
};
const retry = async (work) => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
};
/** N clients of `era`, connected 100 at a time (2 cores cannot open 1,000 sockets at once within a client's timeout) */
const clients = async (url, era) => {
  const all = [];
  for (let i = 0; i < N; i += 100) all.push(...(await Promise.all(Array.from({ length: Math.min(100, N - i) }, () => connect(url, era)))));
  return all;
};

/** Peak RSS growth of a fresh server while N 2026-07-28 clients connect and then all call `tool` at once, 3 times. */
async function modernRound(args, tool) {
  const server = await serve(args);
  const warm = await connect(server.url, 'modern');
  for (let i = 0; i < 50; i++) await warm.callTool({ name: tool, arguments: { key: 'k' } });
  await new Promise((r) => setTimeout(r, 500));
  server.reset();
  const all = await clients(server.url, 'modern');
  for (let round = 0; round < 3; round++)
    await Promise.all(all.map((c) => retry(() => c.callTool({ name: tool, arguments: { key: 'k' } }))));
  const growth = server.peak - server.base;
  await Promise.all([warm, ...all].map((c) => c.close().catch(() => {})));
  server.stop();
  return growth;
}

const ours = [];
const floor = [];
for (let r = 0; r < ROUNDS; r++) {
  // alternate which goes first
  if (r % 2 === 0) {
    ours.push(await modernRound(OURS, 'state_get'));
    floor.push(await modernRound(FLOOR, 'noop'));
  } else {
    floor.push(await modernRound(FLOOR, 'noop'));
    ours.push(await modernRound(OURS, 'state_get'));
  }
}

// 1,000 idle legacy sessions on our server
const server = await serve(OURS);
const warm = await connect(server.url, 'legacy');
await warm.callTool({ name: 'state_get', arguments: { key: 'k' } });
await new Promise((r) => setTimeout(r, 500));
const before = server.rssMb();
const legacy = await clients(server.url, 'legacy');
await new Promise((r) => setTimeout(r, 1000));
const legacyGrowth = server.rssMb() - before;
server.stop();

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const modern = median(ours);
console.log(
  JSON.stringify({
    clients: N,
    modernPeakGrowthMb: Math.round(modern),
    floorPeakGrowthMb: Math.round(median(floor)),
    roundsMb: { ours: ours.map(Math.round), floor: floor.map(Math.round) },
    modernBoundMb: MODERN_MAX_MB,
    modernMet: modern <= MODERN_MAX_MB,
    legacyIdleGrowthMb: Math.round(legacyGrowth),
    legacyBoundMb: LEGACY_MAX_MB,
    legacyMet: legacyGrowth <= LEGACY_MAX_MB,
  }),
);
void legacy;
process.exit(0);
