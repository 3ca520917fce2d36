import { describe, expect, it } from 'vitest';
import { TOOL_TABLE } from '../../src/tool-profiles.js';
import { connect, DOCUMENTED_CODES, memoryStore, type Connected } from '../helpers.js';

// Every tool, on servers that register it alone or in a profile, driven into its errors: each error is the documented
// envelope with a documented code, and its message is whole (what a mention of a left-out tool removes never leaves
// an empty or cut sentence) and names only tools this server registered, with their prefix.

const NO_PLAN = 'plan-000000000000';
const NO_CHECKPOINT = 'ckpt-000000000000';

/** Calls that fail, per tool; `$PLAN` and `$CHECKPOINT` are a real plan and checkpoint. */
const FAILING: Record<string, Array<Record<string, unknown>>> = {
  state_get: [
    { key: 'k', scope: 'agent_type' },
    { key: 'k', scop: 'x' },
  ],
  state_set: [
    { key: 'k', value: 1, ifVersion: 9 },
    { key: 'k', value: 1, scope: 'thread:foreign' },
  ],
  state_update: [{ key: 'text', op: 'increment', value: 1 }],
  state_delete: [{ key: 'k', ifVersion: 9 }],
  state_list: [{ cursor: 'junk' }],
  state_snapshot: [{ cursor: 'junk' }],
  state_batch: [{ ops: [{ op: 'set', key: 'a', value: 1, ifVersion: 5 }] }],
  watch: [{ key: 'k', scope: 'group:', waitMs: 0 }],
  state_changes: [{ afterRevision: 10 ** 12, waitMs: 0 }],
  plan_create: [{ title: 'T', steps: [{ content: 'a', blockedBy: ['s9'] }] }],
  plan_get: [{ planId: NO_PLAN }, { planId: 'nope' }],
  plan_list: [{ cursor: 'junk' }],
  plan_update: [
    { planId: '$PLAN', steps: ['x'] },
    { planId: NO_PLAN, title: 'x' },
  ],
  plan_claim: [{ planId: '$PLAN', stepId: 's2' }, { planId: NO_PLAN }],
  plan_step: [
    { planId: '$PLAN', stepId: 's2', status: 'in_progress' },
    { planId: '$PLAN', stepId: 's1', status: 'completed', fence: 9 },
  ],
  plan_delete: [{ planId: NO_PLAN }],
  scratchpad_write: [{ kind: 'variable', value: 1 }],
  scratchpad_read: [{ maxBytes: 1 }],
  final_answer_set: [{ content: 'again' }],
  final_answer_get: [{ thread: '', waitMs: 0 }],
  budget_step: [{ name: 'nope' }, { amount: 100 }],
  budget_configure: [{ name: 'not a name', max: 5 }],
  budget_increase: [{ name: 'nope', amount: 1 }],
  agent_state_set: [{ state: 'finished' }],
  run_start: [{ thread: 'foreign' }, { parentThread: 'nowhere' }],
  history_append: [{ kind: 'signal', content: 'x' }],
  history_list: [{ cursor: 'junk' }],
  checkpoint_list: [{ checkpointId: 'x' }],
  checkpoint_restore: [{ checkpointId: 'x' }, { checkpointId: NO_CHECKPOINT }, { checkpointId: '$CHECKPOINT', ifRevision: 1 }],
  checkpoint_delete: [{ checkpointId: NO_CHECKPOINT }],
  message_send: [
    { to: 'nobody', content: 'x' },
    { to: 'all', content: 'x', replyTo: 'bad' },
    { to: 'all', content: 'x'.repeat(20_000) },
  ],
  inbox: [{ ack: 'junk', waitMs: 0 }],
};

/** The tool names a text mentions other than as this server registered them. */
function stray(text: string, registered: string[]): string[] {
  const all = Object.keys(TOOL_TABLE).filter((name) => name.includes('_'));
  return (text.match(/[A-Za-z0-9_]+/g) ?? []).filter(
    (word) => !registered.includes(word) && (all.includes(word) || all.some((name) => word.endsWith(`_${name}`))),
  );
}

async function errorsOf(config: Record<string, unknown>): Promise<{ registered: string[]; errors: string[] }> {
  const store = memoryStore();
  const identity = { agent: 'me', thread: 'mine' };
  // the state the failing calls meet, made by a server with every tool
  const setup = await connect({
    store,
    identity,
    config: { tools: ['all'], namespace: 'ns', allowBudgetAdmin: true, budgets: { tokens: 5 } },
  });
  const other = await connect({ store, identity: { agent: 'other', thread: 'foreign' }, config: { tools: ['all'], namespace: 'ns' } });
  await other.ok('whoami');
  const { planId } = await setup.ok('plan_create', { title: 'T', steps: ['a', { content: 'b', blockedBy: ['s1'] }] });
  const { checkpointId } = await setup.ok('checkpoint_save');
  await setup.ok('state_set', { key: 'text', value: 'words' });
  await setup.ok('final_answer_set', { content: 'one' });
  const a: Connected = await connect({ store, identity, config: { namespace: 'ns', ...config } });
  const registered = (await a.client.listTools()).tools.map((t) => t.name);
  const errors: string[] = [];
  for (const name of registered) {
    for (const args of FAILING[name.slice('ns_'.length)] ?? []) {
      const given = JSON.parse(
        JSON.stringify(args).replace('"$PLAN"', JSON.stringify(planId)).replace('"$CHECKPOINT"', JSON.stringify(checkpointId)),
      );
      const result = await a.raw(name.slice('ns_'.length), given);
      const where = `${name} ${JSON.stringify(args).slice(0, 60)}`;
      expect(result.isError, where).toBe(true);
      expect(result.structuredContent, where).toBeUndefined();
      expect(result.content, where).toHaveLength(1);
      const { error } = JSON.parse((result.content[0] as { text: string }).text);
      expect(DOCUMENTED_CODES, where).toContain(error.code);
      if (error.code === 'INVALID_ARGUMENT') expect(error.details?.path, where).toBeDefined();
      errors.push(`${where}: ${error.message}`);
      // a whole message: one or more sentences, none cut where a left-out tool was mentioned
      expect(error.message, where).toMatch(/^[A-Za-z0-9]/);
      expect(error.message, where).toMatch(/[.?]$/);
      expect(error.message.length, where).toBeGreaterThan(20);
      expect(stray(error.message, registered), `${where}: ${error.message}`).toEqual([]);
    }
  }
  await Promise.all([a.close(), setup.close(), other.close()]);
  return { registered, errors };
}

describe('error messages on every tool set', () => {
  const sets: Array<[string, Record<string, unknown>]> = [
    ['all', { tools: ['all'], allowBudgetAdmin: true }],
    ['agent', { tools: ['agent'] }],
    ['agent --read-only', { tools: ['agent'], readOnly: true }],
    ...Object.keys(FAILING).map((name): [string, Record<string, unknown>] => [name, { tools: [name], allowBudgetAdmin: true }]),
  ];
  it.each(sets)('--namespace ns --tools %s', async (_label, config) => {
    const { registered, errors } = await errorsOf(config);
    expect(registered.length).toBeGreaterThan(0);
    expect(errors.length).toBeGreaterThan(0);
  });
});
