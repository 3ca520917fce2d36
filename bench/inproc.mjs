// node [--cpu-prof] bench/inproc.mjs [TOOL] [STORE_URL] [normal]: the tool layer in one process (a real MCP client
// over the SDK's in-memory transport), no pipes and no other process: µs per call, warm. For profiling the call path.
// INPROC_COUNT=1 counts SQLite statements per call; INPROC_PARTS=1 times the after-call bookkeeping apart.
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { defaultConfig } from '../dist/config.js';
import { createServer } from '../dist/server.js';
import { openStore } from '../dist/store/open.js';

const [tool = 'state_get', url = 'memory://', ...rest] = process.argv.slice(2);
const CALLS = Number(process.env.INPROC_CALLS ?? 20_000);
const config = defaultConfig({ agent: 'bench', ...(rest.includes('normal') ? { sync: 'normal' } : {}) });
const store = await openStore(url, rest.includes('normal') ? { synchronous: 'NORMAL' } : {});
// our tools/call handler as registered with the SDK, to time it without the SDK around it (INPROC_PARTS=1)
const handlers = new Map();
if (process.env.INPROC_PARTS === '1') {
  const { McpServer } = await import('@modelcontextprotocol/server');
  const proto = Object.getPrototypeOf(new McpServer({ name: 'probe', version: '1' }).server);
  const register = proto.setRequestHandler;
  proto.setRequestHandler = function (method, ...rest) {
    if (typeof rest[0] === 'function') handlers.set(method, rest[0]);
    return register.call(this, method, ...rest);
  };
}
const bb = tool === 'noop' ? await noopServer() : await createServer(config, store);
/** the floor's server (bench/floor-server.mjs), in this process */
async function noopServer() {
  const { McpServer } = await import('@modelcontextprotocol/server');
  const z = await import('zod');
  const server = new McpServer({ name: 'floor', version: '1.0.0' });
  server.registerTool(
    'noop',
    { description: 'does nothing', inputSchema: z.object({ key: z.string().optional() }), outputSchema: z.object({ ok: z.boolean() }) },
    async () => ({ content: [{ type: 'text', text: '{"ok":true}' }], structuredContent: { ok: true } }),
  );
  return { server, close: () => server.close() };
}
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
const entry = serveStdio(() => bb.server, { transport: serverSide });
const client = new Client({ name: 'inproc', version: '1.0.0' });
await client.connect(clientSide);
const argsOf = (i) =>
  tool === 'state_set' ? { key: `key/${i % 1000}`, value: { n: i, text: 'updated state' } } : { key: `key/${i % 1000}` };
if (tool !== 'noop')
  for (let i = 0; i < 1000; i++)
    await client.callTool({ name: 'state_set', arguments: { key: `key/${i}`, value: { n: i, text: 'updated state' } } });
for (let i = 0; i < 2000; i++) await client.callTool({ name: tool, arguments: argsOf(i) });
// INPROC_COUNT=1: counts SQLite statements run per call (better-sqlite3's Statement methods, both connections)
const counts = new Map();
if (process.env.INPROC_COUNT === '1') {
  const Database = (await import('better-sqlite3')).default;
  const probe = new Database(':memory:');
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1'));
  probe.close();
  for (const m of ['run', 'get', 'all', 'iterate']) {
    const original = proto[m];
    proto[m] = function (...a) {
      const sql = `${m} ${this.source.replace(/\s+/g, ' ').slice(0, 90)}`;
      counts.set(sql, (counts.get(sql) ?? 0) + 1);
      return original.apply(this, a);
    };
  }
}
const { PerformanceObserver } = await import('node:perf_hooks');
let gcMs = 0;
let gcs = 0;
const gc = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gcMs += e.duration;
    gcs++;
  }
});
gc.observe({ entryTypes: ['gc'] });
const heapBefore = process.memoryUsage().heapUsed;
const u = process.cpuUsage();
const t = performance.now();
for (let i = 0; i < CALLS; i++) {
  const r = await client.callTool({ name: tool, arguments: argsOf(i) });
  if (r.isError) throw new Error(r.content[0].text);
}
const wall = ((performance.now() - t) * 1000) / CALLS;
const cpu = process.cpuUsage(u);
await new Promise((r) => setTimeout(r, 10));
gc.disconnect();
console.log(
  `${tool} on ${url}: ${wall.toFixed(1)} µs per call in one process (CPU ${((cpu.user + cpu.system) / CALLS).toFixed(1)} µs; GC ${((gcMs * 1000) / CALLS).toFixed(1)} µs in ${gcs} collections; heap ${((process.memoryUsage().heapUsed - heapBefore) / 1e6).toFixed(1)} MB more)`,
);
for (const [sql, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`${(n / CALLS).toFixed(3)} per call: ${sql}`);
// INPROC_PARTS=1: the after-call bookkeeping and the read apart, called directly on a connection of the same store
if (process.env.INPROC_PARTS === '1') {
  const { openConnection } = await import('../dist/connection.js');
  const conn = await openConnection(config, store);
  const N = 200_000;
  const time = async (label, f) => {
    for (let i = 0; i < 20_000; i++) await f(i);
    const u = process.cpuUsage();
    for (let i = 0; i < N; i++) await f(i);
    const c = process.cpuUsage(u);
    console.log(`${label.padEnd(32)} ${((c.user + c.system) / N).toFixed(2)} µs CPU per call`);
  };
  const call = handlers.get('tools/call');
  const signal = new AbortController().signal;
  const ctx = { mcpReq: { id: 1, method: 'tools/call', signal, notify: async () => {}, log: async () => {} } };
  await time('our tools/call handler, state_get', (i) =>
    call({ method: 'tools/call', params: { name: 'state_get', arguments: { key: `key/${i % 1000}` } } }, ctx),
  );
  await time('an empty async call', async () => {});
  await time('afterCall (sign of life + unread)', () => conn.afterCall());
  await time('presence.touch', () => conn.services.presence.touch());
  await time('messages.unreadHint', () => conn.services.messages.unreadHint());
  await time('kv.get (the read of state_get)', (i) => conn.services.kv.get({ key: `key/${i % 1000}` }));
}
await client.close();
await entry.close();
await bb.close();
await store.close();
