import { spawn } from 'node:child_process';
const p = spawn(process.execPath, ['dist/cli.js', '--store', 'memory://'], {
  env: { ...process.env, BLACKBOARD_TOOLS: 'all' },
  stdio: ['pipe', 'pipe', 'inherit'],
});
let t0;
let buf = '';
p.stdout.on('data', (d) => {
  buf += d;
  for (const line of buf.split('\n').slice(0, -1)) console.log((performance.now() - t0).toFixed(1), line.slice(0, 200));
  buf = buf.split('\n').at(-1);
});
await new Promise((r) => setTimeout(r, 1500));
t0 = performance.now();
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } }) + '\n');
setTimeout(
  () =>
    p.stdin.write(
      JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'state_get', arguments: { key: 'a' }, _meta: meta } }) +
        '\n',
    ),
  50,
);
setTimeout(
  () =>
    p.stdin.write(
      JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'state_get', arguments: { key: 'a' }, _meta: meta } }) +
        '\n',
    ),
  3000,
);
setTimeout(() => {
  p.kill();
  process.exit(0);
}, 4000);
