// Idle waiters cost nothing: 2,000 open watches in one server while another process writes unrelated keys.
// Prints the server's CPU use and its state_get median with and without the watches, in interleaved rounds.
// Usage: node bench/idle-watches.mjs [STORE_URL]   (default: a fresh SQLite file). Part of `npm run bench`.
import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const CLI = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'dist', 'cli.js');
const WATCHES = Number(process.env.BENCH_WATCHES ?? 2000);
const ROUNDS = 3;
const GETS = 300;
const dir = mkdtempSync(join(tmpdir(), 'bb-idle-'));
const store = process.argv[2] ?? `sqlite://${join(dir, 'idle.db')}`;

// 2,000 requests in flight queue many writes on the client's stdin pipe at once: not a leak.
EventEmitter.defaultMaxListeners = WATCHES + 100;

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const clockTicks = 100; // USER_HZ on Linux
/** CPU seconds a process has used so far (user + system), from /proc. */
function cpuSeconds(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

async function spawn(agent) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, '--store', store, '--agent', agent],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  return { client, pid: transport.pid };
}

const server = await spawn('watcher');
const writer = await spawn('writer');
await server.client.callTool({ name: 'state_set', arguments: { key: 'read-me', value: { some: 'value' } } });

let writing = true;
let writes = 0;
const writerLoop = (async () => {
  while (writing) {
    await writer.client.callTool({ name: 'state_set', arguments: { key: `unrelated-${writes % 100}`, value: writes } });
    writes++;
  }
})();

async function measure() {
  const cpuBefore = cpuSeconds(server.pid);
  const started = performance.now();
  const times = [];
  for (let i = 0; i < GETS; i++) {
    const t = performance.now();
    await server.client.callTool({ name: 'state_get', arguments: { key: 'read-me' } });
    times.push(performance.now() - t);
  }
  await new Promise((r) => setTimeout(r, 1000)); // a second of idling with the watches open
  const wall = (performance.now() - started) / 1000;
  return { getMs: median(times), cpu: (cpuSeconds(server.pid) - cpuBefore) / wall };
}

const without = [];
const withWatches = [];
for (let round = 0; round < ROUNDS; round++) {
  without.push(await measure());
  const controller = new AbortController();
  const pending = Array.from({ length: WATCHES }, (_, i) =>
    server.client
      .callTool({ name: 'watch', arguments: { key: `never-${i}`, waitMs: 600_000 } }, { signal: controller.signal, timeout: 700_000 })
      .catch(() => {}),
  );
  await new Promise((r) => setTimeout(r, 1500)); // let them all reach the server and park
  withWatches.push(await measure());
  controller.abort();
  await Promise.all(pending);
}
writing = false;
await writerLoop;

const ratio = median(withWatches.map((w, i) => w.getMs / without[i].getMs));
const result = {
  store: store.split(':')[0],
  watches: WATCHES,
  writesByOtherProcess: writes,
  stateGetMedianMs: { without: median(without.map((w) => w.getMs)), with: median(withWatches.map((w) => w.getMs)) },
  stateGetRatio: Math.round(ratio * 100) / 100,
  serverCpuWhileGetting: { without: median(without.map((w) => w.cpu)), with: median(withWatches.map((w) => w.cpu)) },
  target: 'state_get with watches ≤ 2× without',
  met: ratio <= 2,
};
console.log(JSON.stringify(result));
await Promise.all([server.client.close(), writer.client.close()]);
rmSync(dir, { recursive: true, force: true });
