// A parent agent delegates to a child thread in another process and waits for its answer. The child plans its work,
// spends a budget shared with the parent, records a failed approach, answers once, and ends its run (which saves a
// checkpoint). Run after `npm install`: node examples/delegation.mjs
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

async function agent(...flags) {
  const client = new Client({ name: 'example', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [cli, '--store', store, '--max-iterations', '3', '--tools', 'all', ...flags],
      stderr: 'ignore',
    }),
  );
  const call = async (tool, args = {}) => {
    const result = await client.callTool({ name: tool, arguments: args });
    const body = JSON.parse(result.content[0].text);
    return result.isError ? { error: body.error } : body;
  };
  return { client, call };
}

const parent = await agent('--agent', 'lead', '--thread', 'main');
const child = await agent('--agent', 'fixer', '--thread', 'child-7', '--parent-thread', 'main');

const answer = parent.call('final_answer_get', { thread: 'child-7', waitMs: 20_000 });

await child.call('agent_state_set', { state: 'running' });
const { planId } = await child.call('plan_create', { title: 'Fix the flaky test', steps: ['reproduce', 'fix'] });
for (let i = 1; ; i++) {
  const step = await child.call('budget_step');
  if (step.error) {
    console.log(
      `child: step ${i} refused: ${step.error.code} (${step.error.details.thread} used ${step.error.details.current}/${step.error.details.max})`,
    );
    break;
  }
  console.log(`child: step ${i}, ${step.remaining} left`);
}
await child.call('scratchpad_write', { kind: 'failed_approach', value: 'retry in a loop: hides the race' });
await child.call('plan_update', {
  planId,
  ifVersion: 1,
  stepUpdates: [
    { id: 's1', status: 'completed' },
    { id: 's2', status: 'completed' },
  ],
});
await child.call('final_answer_set', { content: 'The test raced the cache warm-up.' });
const again = await child.call('final_answer_set', { content: 'a second opinion' });
console.log(`child: second answer refused: ${again.error.code}`);
const ended = await child.call('run_end', { status: 'finished' });
console.log(`child: run ended, checkpoint ${ended.checkpointId.slice(0, 3)}…`);

const got = await answer;
console.log(`parent: answer from ${got.answer.thread}: ${got.answer.content}`);
const budget = await parent.call('budget_status');
console.log(`parent: iterations used ${budget.budgets[0].current}/${budget.budgets[0].max} (counted from the child)`);

await parent.client.close();
await child.client.close();
