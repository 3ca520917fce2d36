// A planner and three worker processes share one SQLite blackboard through a plan. The planner creates a plan whose
// steps depend on each other; each worker takes the next free step with plan_claim (atomically: no two workers hold
// the same step, and no step starts before the steps it is blocked by are done), does it, and reports it with
// plan_step. One worker is killed (kill -9) in the middle of its step: its claim lapses after the claim lease (2 s
// here, 600 s by default) and another worker takes the step over and finishes it.
// Run after `npm install`: node examples/work-queue.mjs. To watch it on the board, give it a store and a slower pace:
//   BLACKBOARD_STORE=sqlite:///tmp/board.db WORK_MS=1000 node examples/work-queue.mjs   (and `mcp-blackboard ui` on it)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
// A store of your own stays; otherwise a temporary one is made and removed at the end.
const given = process.env.BLACKBOARD_STORE;
const dir = given ? undefined : mkdtempSync(join(tmpdir(), 'bb-example-'));
const store = given ?? `sqlite://${join(dir, 'board.db')}`;
const workMs = Number(process.env.WORK_MS ?? 50);
const LEASE_SECONDS = 2;

async function agent(name) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, '--store', store, '--agent', name, '--thread', name, '--claim-lease', String(LEASE_SECONDS)],
    stderr: 'ignore',
  });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  const call = async (tool, args = {}) => {
    const result = await client.callTool({ name: tool, arguments: args });
    if (result.isError) throw new Error(`${tool}: ${result.content[0].text}`);
    return result.structuredContent;
  };
  return { name, client, call, kill: () => process.kill(transport.pid, 'SIGKILL') };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

try {
  const planner = await agent('planner');
  const { planId } = await planner.call('plan_create', {
    title: 'Release 1.0',
    steps: [
      'write the changelog',
      'build the packages',
      { content: 'run the test suite', blockedBy: ['s2'] },
      { content: 'sign the packages', blockedBy: ['s2'] },
      { content: 'publish', blockedBy: ['s1', 's3', 's4'] },
    ],
  });
  console.log(`planner: created ${planId} with 5 steps`);

  // worker-c takes the first step and dies in the middle of it, without a word.
  const doomed = await agent('worker-c');
  const { step: dropped } = await doomed.call('plan_claim', { planId });
  doomed.kill();
  console.log(`worker-c: claimed ${dropped.id} and was killed while working on it`);

  const workers = await Promise.all(['worker-a', 'worker-b'].map(agent));
  const done = [];
  await Promise.all(
    workers.map(async (worker) => {
      for (;;) {
        const claim = await worker.call('plan_claim', { planId });
        if (!claim.claimed) {
          if (claim.reason === 'all_done') return;
          // Blocked, or held by someone (perhaps a worker that died: its claim lapses after the lease). Look again soon.
          await sleep(200);
          continue;
        }
        const { step } = claim;
        await sleep(workMs); // the work
        done.push(step.id);
        const moved = await worker.call('plan_step', {
          planId,
          stepId: step.id,
          status: 'completed',
          note: `done by ${worker.name}`,
          fence: claim.claim.fence,
        });
        if (step.attempts) console.log(`${worker.name}: finished ${step.id} after its earlier claim lapsed (${step.attempts} lapsed)`);
        if (moved.unblocked.length > 0) console.log(`${worker.name}: ${step.id} done, unblocked ${moved.unblocked.join(', ')}`);
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
