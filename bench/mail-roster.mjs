// node bench/mail-roster.mjs [STORE_URL] [BATCHES] [PER_BATCH] [name|thread]: mail as the roster grows. Each step is
// a new agent (a new name in a new thread, as a fleet of short-lived workers is) that sends one message to the agent
// before it, by name (or to its `thread:ID`), and reads its own inbox; every step adds one sign of life to the roster. Prints ms per batch of steps
// (a send whose cost grows with the roster makes the batches grow), then one send to `thread:ID`, to `agentType:T`
// and to `all` at the final roster size. The library API in one process: no transport, only the services and store.
// Needs `npm run build`. STORE_URL: sqlite:// (a temp file, the default), memory://, postgres://…, redis://….
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openBlackboard } from '../dist/index.js';

const [urlArg = 'sqlite://', batchesArg = '3', perArg = '500', mode = 'name'] = process.argv.slice(2);
const dir = mkdtempSync(join(tmpdir(), 'bb-mail-roster-'));
const url = urlArg === 'sqlite://' ? `sqlite://${join(dir, 'bench.db')}` : urlArg;
const ns = `bench${Date.now().toString(36)}`;
const root = await openBlackboard({ store: url, namespace: ns, agent: 'root', agentType: 'lead', thread: 'root' });
await root.team.list(); // root is on the roster
const agents = [];
let n = 0;
const step = async () => {
  const me = await root.as({ namespace: ns, agent: `w${n}`, agentType: 'worker', thread: `t${n}` });
  const to = mode === 'thread' ? (n === 0 ? 'thread:root' : `thread:t${n - 1}`) : n === 0 ? 'root' : `w${n - 1}`;
  n++;
  const t0 = performance.now();
  await me.send({ to, content: `hello ${to}` });
  await me.mail.read({ waitMs: 0 });
  const ms = performance.now() - t0;
  agents.push(me);
  return ms;
};
const time = async (label, fn) => {
  const t0 = performance.now();
  const out = await fn();
  console.log(`${label}: ${(performance.now() - t0).toFixed(1)} ms${out !== undefined ? ` (${out})` : ''}`);
};
console.log(
  `store ${urlArg}: ${batchesArg} batches of ${perArg} new agents, each one send (to ${mode === 'thread' ? 'thread:ID' : 'a name'}) + one inbox`,
);
for (let b = 0; b < Number(batchesArg); b++) {
  const t0 = performance.now();
  let inCalls = 0;
  for (let i = 0; i < Number(perArg); i++) inCalls += await step();
  const wall = performance.now() - t0;
  console.log(
    `batch ${b + 1} (roster ${n - Number(perArg) + 1}..${n + 1}): ${wall.toFixed(0)} ms wall, ${inCalls.toFixed(0)} ms in send+inbox, ${(inCalls / Number(perArg)).toFixed(2)} ms a pair`,
  );
  // the handles are closed (their store is the root's): only the roster grows, not the process
  await Promise.all(agents.splice(0).map((a) => a.close()));
}
const last = await root.as({ namespace: ns, agent: `w${n}`, agentType: 'worker', thread: `t${n}` });
await last.team.list();
for (let i = 0; i < 3; i++) {
  await time('send to a named agent', async () => (await last.send({ to: 'root', content: 'x' })).recipients.length);
  await time('send to thread:ID', async () => (await last.send({ to: `thread:t${n - 1}`, content: 'x' })).recipients.length);
  await time('send to agentType:lead', async () => (await last.send({ to: 'agentType:lead', content: 'x' })).recipients.length);
  await time('inbox', async () => (await root.mail.read({ waitMs: 0 })).unread);
}
await time('send to all', async () => (await last.send({ to: 'all', content: 'x' })).recipients.length);
await time('team_list', async () => (await last.team.list()).agents.length);
await last.close();
await root.close();
rmSync(dir, { recursive: true, force: true });
