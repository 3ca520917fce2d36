// Two agent processes share one SQLite blackboard: a planner posts a task, a worker waits for it with `watch`,
// claims it with compare-and-set, and posts the result, which the planner is waiting for.
// Run after `npm install`: node examples/two-agents.mjs
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bb-example-'));
const store = `sqlite://${join(dir, 'board.db')}`;
// The example's temporary store goes away however the script ends.
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

async function agent(name) {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [cli, '--store', store, '--agent', name], stderr: 'ignore' }),
  );
  const call = async (tool, args) => {
    const result = await client.callTool({ name: tool, arguments: args });
    if (result.isError) throw new Error(`${tool}: ${result.content[0].text}`);
    return result.structuredContent;
  };
  return { client, call };
}

const planner = await agent('planner');
const worker = await agent('worker');

// The worker blocks until there is a task (no polling).
const workerDone = (async () => {
  const task = await worker.call('watch', { key: 'task', waitMs: 10_000 });
  console.log(`worker: got task "${task.value.goal}" at version ${task.version}`);
  // Claim it: succeeds only if nobody else changed the task since we read it.
  await worker.call('state_set', { key: 'task', value: { ...task.value, owner: 'worker' }, ifVersion: task.version });
  await worker.call('state_update', { key: 'log', op: 'append', value: 'worker claimed the task' });
  await worker.call('state_set', { key: 'result', value: { answer: 42 } });
})();

await planner.call('state_set', { key: 'task', value: { goal: 'find the answer' }, ifVersion: 0 });
const result = await planner.call('watch', { key: 'result', waitMs: 10_000 });
await workerDone;
console.log(`planner: result ${JSON.stringify(result.value)}`);
console.log('log:', (await planner.call('state_get', { key: 'log' })).value);

await planner.client.close();
await worker.client.close();
