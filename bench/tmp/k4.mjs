import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
const t = new StdioClientTransport({
  command: process.execPath,
  args: ['dist/cli.js', '--store', 'memory://'],
  env: { ...process.env, BLACKBOARD_TOOLS: process.argv[2] ?? 'all' },
  stderr: 'ignore',
});
const c = new Client({ name: 'x', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
let t0 = performance.now();
await c.connect(t);
console.log('connect', (performance.now() - t0).toFixed(1));
t0 = performance.now();
await c.listTools();
console.log('list', (performance.now() - t0).toFixed(1));
t0 = performance.now();
await c.callTool({ name: 'state_get', arguments: { key: 'a' } });
console.log('call1', (performance.now() - t0).toFixed(1));
t0 = performance.now();
await c.callTool({ name: 'state_get', arguments: { key: 'a' } });
console.log('call2', (performance.now() - t0).toFixed(1));
await c.close();
