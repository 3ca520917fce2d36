// A planner and three worker processes share one SQLite blackboard through a plan. The planner creates a plan whose
// steps depend on each other; each worker takes the next free step with plan_claim (atomically: no two workers get
// the same step, and no step starts before the steps it is blocked by are done), does it, and marks it completed.
// Run after `npm install`: node examples/work-queue.mjs. To watch it on the board, give it a store and a slower pace:
//   BLACKBOARD_STORE=sqlite:///tmp/board.db WORK_MS=1000 node examples/work-queue.mjs   (and `mcp-blackboard ui` on it)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
// A store of your own stays; otherwise a temporary one is made and removed at the end.
const given = process.env.BLACKBOARD_STORE;
const dir = given ? undefined : mkdtempSync(join(tmpdir(), 'bb-example-'));
const store = given ?? `sqlite://${join(dir, 'board.db')}`;
const workMs = Number(process.env.WORK_MS ?? 50);

async function agent(name) {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [cli, '--store', store, '--agent', name, '--tools', 'planner'], stderr: 'ignore' }));
  const call = async (tool, args = {}) => {
    const result = await client.callTool({ name: tool, arguments: args });
    if (result.isError) throw new Error(`${tool}: ${result.content[0].text}`);
    return result.structuredContent;
  };
  return { name, client, call };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

try {
  const planner = await agent('planner');
  const { planId } = await planner.call('plan_create', {
    title: 'Release 1.0',
    scope: 'global',
    steps: [
      'write the changelog',
      'build the packages',
      { content: 'run the test suite', blockedBy: ['s2'] },
      { content: 'sign the packages', blockedBy: ['s2'] },
      { content: 'publish', blockedBy: ['s1', 's3', 's4'] },
    ],
  });
  console.log(`planner: created ${planId} with 5 steps`);

  const workers = await Promise.all(['worker-a', 'worker-b', 'worker-c'].map(agent));
  const done = [];
  await Promise.all(
    workers.map(async (worker) => {
      for (;;) {
        const claim = await worker.call('plan_claim', { planId });
        if (!claim.claimed) {
          if (claim.reason === 'all_done') return;
          // Blocked or taken: wait for the plan to change instead of polling.
          const { plan } = await worker.call('plan_get', { planId });
          await worker.call('watch', { key: planId, scope: 'plan', afterVersion: plan.version, waitMs: 5_000 });
          continue;
        }
        const step = claim.step;
        await sleep(workMs); // the work
        done.push(step.id);
        await worker.call('plan_update', { planId, stepUpdates: [{ id: step.id, status: 'completed', note: `done by ${worker.name}` }] });
      }
    }),
  );

  const { plan } = await planner.call('plan_get', { planId });
  for (const step of plan.steps) console.log(`${step.id} ${step.status} by ${step.owner}: ${step.content}`);
  console.log(`order: ${done.join(' ')}`);
  console.log(`planner: all ${plan.steps.filter((s) => s.status === 'completed').length} steps completed, each by one worker`);
  await Promise.all([planner, ...workers].map((a) => a.client.close()));
} finally {
  if (dir) rmSync(dir, { recursive: true, force: true });
}
