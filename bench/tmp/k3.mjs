import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
const pin = process.argv[2];
const t = new StdioClientTransport({
  command: process.execPath,
  args: ['dist/cli.js', '--store', 'memory://'],
  env: { ...process.env, BLACKBOARD_TOOLS: 'all' },
  stderr: 'inherit',
});
const c = new Client({ name: 'x', version: '1' }, pin ? { versionNegotiation: { mode: { pin } } } : {});
await c.connect(t);
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  await c.callTool({ name: 'state_get', arguments: { key: 'a' } });
  const t1 = performance.now();
  await c.callTool({ name: 'state_set', arguments: { key: 'a', value: i } });
  console.log('get', (t1 - t0).toFixed(1), 'set', (performance.now() - t1).toFixed(1));
}
await c.close();
