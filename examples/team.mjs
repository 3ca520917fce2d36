// A lead and three workers, each its own process with its own stdio server, share one SQLite blackboard: they split a
// plan's steps (plan_claim / plan_step) and talk through durable messages. The lead redirects one worker mid-step
// (the worker learns of the mail from the `unread` count in the _meta of its own tool replies, gives the step back and
// does what it was asked), a worker asks the lead a question and waits for the answer, and the lead sees who holds
// what with team_list. Run after `npm install && npm run build`: node examples/team.mjs
// (one process per role: `node examples/team.mjs lead|worker NAME STORE` is what the first process starts).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
const self = fileURLToPath(import.meta.url);
const STEP_MS = Number(process.env.STEP_MS ?? 2000);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** One agent: an MCP client over its own stdio server process, every tool enabled. */
async function connect(name, store) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, '--store', store, '--agent', name, '--agent-type', name === 'lead' ? 'lead' : 'worker', '--thread', name, '--tools', 'all'],
    stderr: 'ignore',
  });
  const client = new Client({ name: `team-example-${name}`, version: '1.0.0' });
  await client.connect(transport);
  /** a tool's result, and the unread count its _meta carries */
  const call = async (tool, args = {}) => {
    const result = await client.callTool({ name: tool, arguments: args });
    if (result.isError) throw new Error(`${tool}: ${result.content[0].text}`);
    return { ...result.structuredContent, unread: result.structuredContent.unread ?? result._meta?.unread ?? 0 };
  };
  return { call, close: () => client.close() };
}

async function lead(store) {
  const me = await connect('lead', store);
  const steps = ['collect the data', 'clean the data', 'fit the model', 'write the report', 'draw the charts', 'review'];
  const { planId } = await me.call('plan_create', { title: 'Quarterly analysis', steps });
  await me.call('state_set', { key: 'plan', value: planId });
  console.log(`created ${planId} with ${steps.length} steps`);
  let redirected = false;
  let done = false;
  while (!done) {
    // who holds what: redirect w2 once it is in the middle of a step
    if (!redirected) {
      const { agents } = await me.call('team_list');
      const w2 = agents.find((a) => a.agent === 'w2' && a.holding.length > 0);
      if (w2) {
        await me.call('message_send', {
          to: 'w2',
          content: `redirect: give ${w2.holding[0].stepId} back and check the data sources first`,
        });
        console.log(`redirected w2 away from ${w2.holding[0].stepId}`);
        redirected = true;
      }
    }
    const box = await me.call('inbox', { waitMs: redirected ? 1000 : 100 });
    for (const m of box.messages) {
      if (m.content.startsWith('question:')) {
        await me.call('message_send', { to: m.from, content: 'JSON, one file per quarter', replyTo: m.id });
        console.log(`answered ${m.from}: ${m.content}`);
      }
    }
    if (box.messages.length > 0) await me.call('inbox', { waitMs: 0, ack: box.cursor });
    const { plan } = await me.call('plan_get', { planId });
    done = plan.done === plan.total;
  }
  const { plan } = await me.call('plan_get', { planId, detail: 'full' });
  console.log(`completed: ${plan.steps.map((s) => `${s.id}=${s.owner}`).join(' ')}`);
  await me.call('message_send', { to: 'agentType:worker', content: 'stop: all done' });
  await me.close();
}

async function worker(name, store) {
  const me = await connect(name, store);
  await me.call('whoami'); // on the roster from now on
  let planId = (await me.call('state_get', { key: 'plan' })).value;
  while (!planId) {
    await sleep(50);
    planId = (await me.call('state_get', { key: 'plan' })).value;
  }
  let asked = false;
  for (;;) {
    const got = await me.call('plan_claim', { planId });
    if (!got.claimed) {
      // nothing free: wait for mail (the lead's stop) instead of polling
      const box = await me.call('inbox', { waitMs: 1000 });
      if (box.messages.some((m) => m.content.startsWith('stop'))) break;
      if (box.messages.length > 0) await me.call('inbox', { waitMs: 0, ack: box.cursor });
      continue;
    }
    const step = got.step;
    if (name === 'w3' && !asked) {
      asked = true;
      const { messageId } = await me.call('message_send', { to: 'lead', content: 'question: which format for the results?' });
      let answer;
      while (!answer) {
        const box = await me.call('inbox', { waitMs: 5000 });
        answer = box.messages.find((m) => m.replyTo === messageId);
        if (answer) await me.call('inbox', { waitMs: 0, ack: box.cursor });
      }
      console.log(`asked the lead, answer: ${answer.content}`);
    }
    let gaveBack = false;
    for (let t = 0; t < STEP_MS && !gaveBack; t += 50) {
      const progress = await me.call('state_update', { key: `progress/${step.id}`, op: 'increment', value: 1 });
      if (progress.unread > 0) {
        const box = await me.call('inbox', { waitMs: 0 });
        const order = box.messages.find((m) => m.content.startsWith('redirect'));
        if (order) {
          await me.call('plan_step', { planId, stepId: step.id, status: 'pending', note: 'redirected by the lead' });
          await me.call('state_set', { key: 'sources-checked', value: name });
          console.log(`redirected mid-step ${step.id}: gave it back and checked the sources`);
          gaveBack = true;
        }
        await me.call('inbox', { waitMs: 0, ack: box.cursor });
      }
      await sleep(50);
    }
    if (!gaveBack) {
      await me.call('plan_step', { planId, stepId: step.id, status: 'completed' });
      console.log(`completed ${step.id}`);
    }
  }
  await me.close();
}

const [role, name, store] = process.argv.slice(2);
if (role === 'lead') await lead(store);
else if (role === 'worker') await worker(name, store);
else {
  // The first process: a temporary store (or BLACKBOARD_STORE), then one process per agent, their lines prefixed.
  const dir = process.env.BLACKBOARD_STORE ? undefined : mkdtempSync(join(tmpdir(), 'bb-team-'));
  const db = process.env.BLACKBOARD_STORE ?? `sqlite://${join(dir, 'board.db')}`;
  try {
    const run = (args, label) =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [self, ...args, db], { stdio: ['ignore', 'pipe', 'inherit'] });
        createInterface({ input: child.stdout }).on('line', (line) => console.log(`${label}: ${line}`));
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${label} exited with ${code}`))));
      });
    await Promise.all([run(['lead', 'lead'], 'lead'), ...['w1', 'w2', 'w3'].map((w) => run(['worker', w], w))]);
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}
