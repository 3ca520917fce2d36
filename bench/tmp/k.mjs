import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
const t = new StdioClientTransport({
  command: process.execPath,
  args: ['dist/cli.js', '--store', 'sqlite:///tmp/k9test.db', '--sync', 'full'],
  env: { ...process.env, BLACKBOARD_TOOLS: 'all' },
  stderr: 'inherit',
});
const c = new Client({ name: 'x', version: '1' });
await c.connect(t);
console.log(JSON.stringify(await c.callTool({ name: 'state_set', arguments: { key: 'r0-w0-0', value: 1 } })));
console.log(JSON.stringify(await c.callTool({ name: 'state_update', arguments: { key: 'total', op: 'increment', value: 1 } })));
await c.close();
