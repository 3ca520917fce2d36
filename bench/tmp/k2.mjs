import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
const t = new StdioClientTransport({
  command: process.execPath,
  args: ['dist/cli.js', '--store', 'sqlite:///tmp/k9test2.db', '--sync', 'full'],
  env: { ...process.env, BLACKBOARD_TOOLS: 'all' },
  stderr: 'inherit',
});
const c = new Client({ name: 'x', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await c.connect(t);
let n = 0,
  stop = false;
setTimeout(() => (stop = true), 1000);
await Promise.all(
  [0, 1, 2, 3].map(async (w) => {
    while (!stop) {
      const r = await c.callTool({ name: 'state_set', arguments: { key: `k${w}-${n++}`, value: n } });
      if (r.isError) console.log(JSON.stringify(r));
      await c.callTool({ name: 'state_update', arguments: { key: 'total', op: 'increment', value: 1 } });
    }
  }),
);
console.log('ok', n);
await c.close();
