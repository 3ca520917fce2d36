import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach } from '../helpers.js';

const agent = agentsClosedAfterEach();

const READ_ONLY = [
  'state_get',
  'state_list',
  'state_snapshot',
  'watch',
  'state_changes',
  'plan_get',
  'plan_list',
  'scratchpad_read',
  'final_answer_get',
  'budget_status',
  'agent_state_get',
  'whoami',
  'history_list',
  'checkpoint_list',
  'board_show',
  'team_list',
];
const MUTATING = [
  'state_set',
  'state_delete',
  'state_update',
  'state_batch',
  'plan_create',
  'plan_update',
  'plan_claim',
  'plan_step',
  'plan_delete',
  'scratchpad_write',
  'final_answer_set',
  'budget_step',
  'budget_configure',
  'budget_increase',
  'agent_state_set',
  'run_start',
  'run_end',
  'history_append',
  'history_prune',
  'signal',
  'checkpoint_save',
  'checkpoint_restore',
  'checkpoint_delete',
  'message_send',
  // moves only the caller's own acknowledged position
  'inbox',
];

describe('the whole tool list', () => {
  it('every documented tool is there, with an output schema, a description and annotations that say whether it writes', async () => {
    const a = await agent({ config: { allowBudgetAdmin: true } });
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...READ_ONLY, ...MUTATING].sort());
    for (const tool of tools) {
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      // an argument object without properties says it takes none; one with properties refuses others all the same
      if (Object.keys(tool.inputSchema.properties ?? {}).length === 0) expect(tool.inputSchema.additionalProperties, tool.name).toBe(false);
      expect(tool.description!.length, tool.name).toBeGreaterThan(12);
      // annotations list what differs from MCP's defaults (readOnlyHint false, destructiveHint true, idempotentHint false)
      expect(tool.annotations?.readOnlyHint ?? false, tool.name).toBe(READ_ONLY.includes(tool.name));
      expect(tool.annotations?.openWorldHint, tool.name).toBe(false);
      if (!READ_ONLY.includes(tool.name)) {
        expect([undefined, false], tool.name).toContain(tool.annotations?.destructiveHint);
        expect([undefined, true], tool.name).toContain(tool.annotations?.idempotentHint);
      }
    }
  });

  it('every mutating tool takes idempotencyKey, and ifVersion where there is a version to compare', async () => {
    const a = await agent({ config: { allowBudgetAdmin: true } });
    const byName = Object.fromEntries((await a.client.listTools()).tools.map((t) => [t.name, t.inputSchema.properties ?? {}]));
    // inbox writes only its ack, which is idempotent by itself (the position moves to the cursor given, never back)
    for (const name of MUTATING.filter((n) => n !== 'inbox')) expect(byName[name], name).toHaveProperty('idempotencyKey');
    expect(byName.inbox).not.toHaveProperty('idempotencyKey');
    for (const name of ['state_set', 'state_delete', 'state_update', 'plan_update', 'plan_delete'])
      expect(byName[name], name).toHaveProperty('ifVersion');
  });

  it('with --namespace every name is prefixed', async () => {
    const a = await agent({ config: { namespace: 'ops' } });
    const { tools } = await a.client.listTools();
    expect(tools.every((t) => t.name.startsWith('ops_'))).toBe(true);
    expect(tools.map((t) => t.name)).toContain('ops_checkpoint_restore');
  });
});
