// Memory of one HTTP server: RSS growth under 1,000 concurrent 2026-07-28 clients doing state_get (stateless: no
// session is kept), and with 1,000 idle 2025-11-25 sessions. Prints one JSON line with each figure's bound and whether it was met.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const here = import.meta.dirname;
const N = Number(process.env.CLIENTS ?? 1000);
const MODERN_MAX_MB = 64;
const LEGACY_MAX_MB = 200;

const child = spawn(
  process.execPath,
  [
    ...(process.env.SERVER_NODE_ARGS ? process.env.SERVER_NODE_ARGS.split(' ') : []),
    join(here, '..', 'dist', 'cli.js'),
    '--http',
    '0',
    '--store',
    'memory://',
    '--max-sessions',
    String(N + 10),
  ],
  {
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
const url = await new Promise((resolve, reject) => {
  let err = '';
  child.stderr.on('data', (c) => {
    err += c;
    const m = /(http:\/\/\S+\/mcp)/.exec(err);
    if (m) resolve(m[1]);
  });
  child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
});
let serverErr = '';
child.stderr.on('data', (c) => (serverErr += c));
child.on('exit', (code, signal) => console.error(`server exited (${code ?? signal}); its stderr:\n${serverErr.slice(-3000)}`));
// a background stream the SDK client keeps may break under this load; that is not a failure of a measured call
process.on('unhandledRejection', (error) => console.error('background client error:', error?.message ?? error));
const rssMb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024;
let peak = 0;
const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 20);

/** a client of `era`, connected (retried: under this load a kept-alive socket may be closed as it is reused) */
const connect = async (era) => {
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
// warm up: the code paths run once before the baseline
const warm = await connect('modern');
await warm.callTool({ name: 'state_set', arguments: { key: 'k', value: { some: 'value' } } });
for (let i = 0; i < 50; i++) await warm.callTool({ name: 'state_get', arguments: { key: 'k' } });
await new Promise((r) => setTimeout(r, 500));
const base = rssMb();
peak = base;

// connected 100 at a time (a 2-core machine cannot open 1,000 sockets at once within the client's timeout), then all
// 1,000 call at once
const modern = [];
for (let i = 0; i < N; i += 100) modern.push(...(await Promise.all(Array.from({ length: Math.min(100, N - i) }, () => connect('modern')))));
for (let round = 0; round < 3; round++) {
  await Promise.all(modern.map((c) => retry(() => c.callTool({ name: 'state_get', arguments: { key: 'k' } }))));
}
const modernPeak = peak - base;
await Promise.all(modern.map((c) => c.close()));
await new Promise((r) => setTimeout(r, 1000));

const before = rssMb();
peak = before;
const legacy = [];
for (let i = 0; i < N; i += 100) legacy.push(...(await Promise.all(Array.from({ length: Math.min(100, N - i) }, () => connect('legacy')))));
await new Promise((r) => setTimeout(r, 1000));
const legacyGrowth = rssMb() - before;
clearInterval(sampler);
const result = {
  clients: N,
  baseMb: Math.round(base),
  modernPeakGrowthMb: Math.round(modernPeak),
  legacyIdleGrowthMb: Math.round(legacyGrowth),
  modernBoundMb: MODERN_MAX_MB,
  modernMet: modernPeak <= MODERN_MAX_MB,
  legacyBoundMb: LEGACY_MAX_MB,
  legacyMet: legacyGrowth <= LEGACY_MAX_MB,
};
console.log(JSON.stringify(result));
child.kill();
process.exit(0);
