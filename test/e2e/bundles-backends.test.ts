// Bundles across backends: a store populated through the tools, exported, imported into every other backend kind in
// turn (SQLite → Postgres → Redis → SQLite), reads back the same through the tools.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { runCli, spawnAgent } from '../helpers.js';
import { sharedStores } from '../stores.js';

const stores = sharedStores();
const NS = ['--namespace', 'team'];

async function populate(url: string): Promise<void> {
  const common = ['--store', url, ...NS, '--budget', 'tool_calls=50', '--max-iterations', '9', '--keep-checkpoints', '2'];
  const a = await spawnAgent([...common, '--thread', 'TA', '--agent', 'alice', '--agent-type', 'lead']);
  const b = await spawnAgent([...common, '--thread', 'TB', '--agent', 'bob', '--agent-type', 'worker', '--parent-thread', 'TA']);
  try {
    for (const v of [1, 2, 3]) await a.ok('state_set', { key: 'g', value: { v, s: 'ünï\u2028' } });
    await a.ok('state_set', { key: 'tmp', value: 'lives', ttlSeconds: 3600 });
    await a.ok('state_set', { key: 'gone', value: 1 });
    await a.ok('state_delete', { key: 'gone' });
    await a.ok('state_set', { key: 'gone', value: 2 });
    for (const scope of ['thread', 'run', 'parent', 'agent_type', 'profile', 'group:crew'])
      await a.ok('state_set', { key: `k-${scope}`, value: scope, scope });
    await a.ok('state_update', { key: 'n', op: 'increment', value: 5, scope: 'thread' });
    const plan = await a.ok('plan_create', {
      title: 'work',
      steps: ['one', { content: 'two', blockedBy: ['s1'] }, 'three', 'four'],
    });
    await b.ok('plan_claim', { planId: plan.planId, stepId: 's1' });
    await b.ok('plan_claim', { planId: plan.planId, stepId: 's3' });
    await b.ok('plan_step', { planId: plan.planId, stepId: 's3', status: 'completed', note: 'done' });
    await a.ok('plan_create', { title: 'mine', steps: ['x'], scope: 'thread' });
    await a.ok('scratchpad_write', { kind: 'variable', name: 'x', value: 42 });
    await a.ok('scratchpad_write', { kind: 'observation', value: 'seen' });
    await a.ok('budget_step', { name: 'tool_calls', amount: 3 });
    await a.ok('budget_step', {});
    await a.ok('history_append', { kind: 'note', content: 'hello' });
    await a.ok('agent_state_set', { state: 'running' });
    for (let i = 0; i < 3; i++) await a.ok('checkpoint_save', { label: `c${i}` });
    await b.ok('team_list', {});
    await a.ok('message_send', { to: 'bob', content: 'first' });
    await a.ok('message_send', { to: 'bob', content: 'second' });
    await a.ok('message_send', { to: 'carol', content: 'later', waitForRecipient: true });
    const inbox = await b.ok('inbox', { waitMs: 0 });
    expect(inbox.messages).toHaveLength(2);
    const first = await b.ok('inbox', { waitMs: 0, limit: 1 });
    await b.ok('inbox', { waitMs: 0, ack: first.cursor });
    await b.ok('final_answer_set', { content: 'the answer', metadata: { n: 1 } });
  } finally {
    await a.close();
    await b.close();
  }
}

/** What the tools read back from a store, minus what a store's own clock or revision makes differ. */
async function reads(url: string): Promise<Record<string, unknown>> {
  const a = await spawnAgent(['--store', url, ...NS, '--thread', 'TA', '--agent', 'alice', '--agent-type', 'lead']);
  const b = await spawnAgent([
    '--store',
    url,
    ...NS,
    '--thread',
    'TB',
    '--agent',
    'bob',
    '--agent-type',
    'worker',
    '--parent-thread',
    'TA',
  ]);
  const out: Record<string, unknown> = {};
  const drop = (x: Record<string, unknown>, ...names: string[]) => {
    for (const n of names) delete x[n];
    return x;
  };
  try {
    for (const key of ['g', 'tmp', 'gone']) out[`get ${key}`] = await a.ok('state_get', { key });
    for (const scope of ['thread', 'run', 'parent', 'agent_type', 'profile', 'group:crew'])
      out[`get ${scope}`] = await a.ok('state_get', { key: `k-${scope}`, scope });
    out.list = await a.ok('state_list', {});
    const plans = await a.ok('plan_list', {});
    out.plans = plans.plans;
    for (const p of plans.plans) out[`plan ${p.title}`] = await a.ok('plan_get', { planId: p.planId, detail: 'full' });
    out.scratch = await a.ok('scratchpad_read');
    out.budgets = await a.ok('budget_status');
    out.history = (await a.ok('history_list', {})).entries;
    out.state = await a.ok('agent_state_get');
    out.checkpoints = (await a.ok('checkpoint_list', {})).checkpoints;
    out.final = await b.ok('final_answer_get', { waitMs: 0 });
    out.inbox = drop(await b.ok('inbox', { waitMs: 0 }), 'cursor');
    out.team = ((await b.ok('team_list', {})).agents as Array<Record<string, unknown>>).map((e) => drop(e, 'lastSeen', 'status', 'client'));
  } finally {
    await a.close();
    await b.close();
  }
  return out;
}

describe('a bundle moved across every backend kind', () => {
  it.runIf(stores.length === 3)(
    'SQLite → Postgres → Redis → SQLite: the same bytes, and the tools read back the same',
    async () => {
      const [sqlite, postgres, redis] = stores;
      const source = sqlite.fresh();
      await populate(source);
      const exported = await runCli(['export', '--store', source, ...NS]);
      expect(exported.code, exported.stderr).toBe(0);
      const thread = await runCli(['export', '--store', source, ...NS, '--thread', 'TA']);
      expect(thread.code, thread.stderr).toBe(0);
      const before = await reads(source);
      let from = exported.stdout;
      let threadFrom = thread.stdout;
      const file = (text: string) => {
        const path = join(tempDir(), 'bundle.json');
        writeFileSync(path, text);
        return path;
      };
      for (const kind of [postgres, redis, sqlite]) {
        const target = kind.fresh();
        const imported = await runCli(['import', file(from), '--store', target, ...NS]);
        expect(imported.code, imported.stderr).toBe(0);
        const again = await runCli(['export', '--store', target, ...NS]);
        expect(again.stdout, target).toBe(exported.stdout);
        // (checkpoints do not travel in a namespace bundle)
        expect({ ...(await reads(target)), checkpoints: before.checkpoints }, target).toEqual(before);
        // a thread bundle alone, into a store of its own
        const alone = kind.fresh();
        const t = await runCli(['import', file(threadFrom), '--store', alone, ...NS]);
        expect(t.code, t.stderr).toBe(0);
        const tAgain = await runCli(['export', '--store', alone, ...NS, '--thread', 'TA']);
        expect(tAgain.stdout, alone).toBe(thread.stdout);
        from = again.stdout;
        threadFrom = tAgain.stdout;
      }
    },
    240_000,
  );
});
