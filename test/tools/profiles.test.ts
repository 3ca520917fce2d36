import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { mcpToFunctionTool, type MCPServer } from '@openai/agents-core';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/cli/serve.js';
import { TOOL_TABLE } from '../../src/tool-profiles.js';
import { agentsClosedAfterEach, type Connected } from '../helpers.js';

// What a model reads on every turn, in characters: names + descriptions + input schemas as compact JSON ("visible"),
// and the whole listing entry with title, annotations and output schema ("full"). The README states these figures.
const BUDGET = { agent: { visible: 8_000, full: 16_000 }, all: { visible: 16_000, full: 32_000 } };

const AGENT_PROFILE = [
  'state_get',
  'state_set',
  'state_update',
  'state_delete',
  'state_list',
  'watch',
  'plan_create',
  'plan_get',
  'plan_list',
  'plan_claim',
  'plan_step',
  'scratchpad_write',
  'scratchpad_read',
  'final_answer_set',
  'final_answer_get',
  'budget_step',
  'whoami',
];

const agent = agentsClosedAfterEach();

const visible = (tools: Tool[]): number =>
  tools.reduce((n, t) => n + JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema }).length, 0);
const full = (tools: Tool[]): number => tools.reduce((n, t) => n + JSON.stringify(t).length, 0);

async function listed(config: Record<string, unknown> = {}): Promise<{ a: Connected; tools: Tool[] }> {
  const a = await agent({ config: { tools: ['agent'], ...config } as never });
  return { a, tools: (await a.client.listTools()).tools };
}

describe('profiles', () => {
  it('the default is the agent profile: the 17 tools a worker needs (those its server declares)', async () => {
    expect(parseConfig([], {})).toMatchObject({ config: { tools: ['agent'], readOnly: false } });
    const { tools } = await listed();
    const declared = (await listed({ tools: ['all'] })).tools.map((t) => t.name);
    expect(tools.map((t) => t.name).sort()).toEqual(AGENT_PROFILE.filter((n) => declared.includes(n)).sort());
    expect(
      Object.entries(TOOL_TABLE)
        .filter(([, t]) => t.profile === 'agent')
        .map(([n]) => n)
        .sort(),
    ).toEqual([...AGENT_PROFILE].sort());
  });

  it('profiles add to agent and combine; families and single names select exactly; all is everything', async () => {
    const names = async (tools: string[], extra: Record<string, unknown> = {}) =>
      (await listed({ tools, ...extra })).tools.map((t) => t.name);
    const planner = await names(['planner']);
    expect(planner).toEqual(expect.arrayContaining(['plan_update', 'plan_delete', 'watch', 'whoami']));
    expect(await names(['follow'])).toEqual(expect.arrayContaining(['state_changes', 'state_snapshot', 'state_batch', 'state_get']));
    expect(await names(['history'])).toEqual(expect.arrayContaining(['history_append', 'history_list', 'history_prune', 'signal']));
    const operator = await names(['operator']);
    expect(operator).toEqual(expect.arrayContaining(['checkpoint_save', 'run_start', 'run_end', 'agent_state_set', 'budget_status']));
    expect(operator).not.toContain('budget_configure');
    expect(await names(['operator'], { allowBudgetAdmin: true })).toEqual(expect.arrayContaining(['budget_configure', 'budget_increase']));
    const both = await names(['planner', 'follow']);
    expect(both).toEqual(expect.arrayContaining(['plan_update', 'state_changes']));
    expect((await names(['kv'])).sort()).toEqual([
      'state_batch',
      'state_changes',
      'state_delete',
      'state_get',
      'state_list',
      'state_set',
      'state_snapshot',
      'state_update',
      'watch',
    ]);
    expect(await names(['whoami', 'history_list'])).toEqual(['whoami', 'history_list']);
    const all = await names(['all']);
    expect(all).toHaveLength(38 + (all.includes('plan_step') ? 1 : 0));
    // the team profile adds the roster and messages to agent's tools, and combines with others
    const team = await names(['agent', 'team']);
    expect(team).toHaveLength((await names(['agent'])).length + 3);
    expect(team).toEqual(expect.arrayContaining(['team_list', 'message_send', 'inbox']));
    expect(all).not.toContain('budget_increase');
  });

  it('--read-only registers read tools only; --tools is checked at start-up with the closest name', async () => {
    const { tools } = await listed({ tools: ['all'], readOnly: true });
    expect(tools.length).toBeGreaterThan(10);
    expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
    expect(parseConfig(['--read-only', '--tools', 'agent,team'], {})).toMatchObject({
      config: { tools: ['agent', 'team'], readOnly: true },
    });
    expect(() => parseConfig(['--tools', 'agent,planer'], {})).toThrow(
      /--tools: unknown tool, family or profile "planer" \(did you mean planner\?\)/,
    );
    expect(() => parseConfig([], { BLACKBOARD_TOOLS: 'nope' })).toThrow(/^BLACKBOARD_TOOLS: unknown/);
  });
});

describe('sizes', () => {
  const cases = [
    { label: 'default (agent)', config: {}, budget: BUDGET.agent },
    { label: '--namespace team', config: { namespace: 'team' }, budget: BUDGET.agent },
    { label: '--tools all', config: { tools: ['all'] }, budget: BUDGET.all },
  ];
  it.each(cases)('$label: within its budget of characters', async ({ label, config, budget }) => {
    const { tools } = await listed(config);
    console.log(`tools/list ${label}: ${tools.length} tools, ${visible(tools)} visible, ${full(tools)} full`);
    expect(visible(tools)).toBeLessThanOrEqual(budget.visible);
    expect(full(tools)).toBeLessThanOrEqual(budget.full);
  });

  it('--tools all --namespace zq: the same list with the prefix on each tool name, and nothing else', async () => {
    const plain = (await listed({ tools: ['all'] })).tools;
    const spaced = (await listed({ tools: ['all'], namespace: 'zq' })).tools;
    expect(JSON.stringify(spaced).replaceAll('zq_', '')).toBe(JSON.stringify(plain));
    // within the budget of --tools all plus what the prefix itself costs (every name, and every tool a text names)
    const prefixed = (tools: Tool[]) =>
      tools.reduce(
        (n, t) => n + JSON.stringify({ name: t.name, description: t.description, inputSchema: t.inputSchema }).split('zq_').length - 1,
        0,
      );
    console.log(`tools/list --tools all --namespace zq: ${visible(spaced)} visible, ${prefixed(spaced)} prefixed names`);
    expect(visible(spaced)).toBeLessThanOrEqual(BUDGET.all.visible + 'zq_'.length * prefixed(spaced));
    expect(full(spaced)).toBeLessThanOrEqual(BUDGET.all.full + 'zq_'.length * (JSON.stringify(spaced).split('zq_').length - 1));
  });

  it('every description says what, when and what comes back in at most 250 characters', async () => {
    const { tools } = await listed({ tools: ['all'], allowBudgetAdmin: true });
    for (const tool of tools) {
      expect(tool.description!.length, tool.name).toBeLessThanOrEqual(250);
      if (!tool.name.startsWith('plan_')) expect(tool.description, tool.name).toMatch(/Returns /);
    }
  });
});

/** Every schema node of an input schema, with its path. */
function nodes(schema: unknown, path = ''): Array<[string, Record<string, unknown>]> {
  if (schema === null || typeof schema !== 'object') return [];
  const node = schema as Record<string, unknown>;
  const out: Array<[string, Record<string, unknown>]> = [[path, node]];
  for (const [name, child] of Object.entries((node.properties as Record<string, unknown>) ?? {}))
    out.push(...nodes(child, `${path}.${name}`));
  if (node.items) out.push(...nodes(node.items, `${path}[]`));
  for (const key of ['anyOf', 'oneOf', 'allOf'])
    for (const [i, child] of ((node[key] as unknown[]) ?? []).entries()) out.push(...nodes(child, `${path}|${i}`));
  return out;
}

describe('schemas every model API accepts', () => {
  it('no exclusive bounds, no type lists, every property typed except any-JSON values (described as such)', async () => {
    const { tools } = await listed({ tools: ['all'], allowBudgetAdmin: true });
    const broken: string[] = [];
    for (const tool of tools) {
      for (const [path, node] of nodes(tool.inputSchema)) {
        const where = `${tool.name}${path}`;
        if ('exclusiveMinimum' in node || 'exclusiveMaximum' in node) broken.push(`${where}: exclusive bound`);
        if (Array.isArray(node.type)) broken.push(`${where}: type list`);
        const typed = 'type' in node || 'anyOf' in node || 'enum' in node;
        if (!typed && !/Any JSON/.test(String(node.description))) broken.push(`${where}: untyped`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the OpenAI Agents SDK converts every tool strictly, and its nulls for "not given" are accepted', async () => {
    const { a, tools } = await listed({ tools: ['all'], allowBudgetAdmin: true });
    const server = {
      name: 'blackboard',
      cacheToolsList: false,
      callTool: async (name: string, args: Record<string, unknown> | null) =>
        (await a.client.callTool({ name, arguments: args ?? {} })).content,
    } as unknown as MCPServer;
    const fallbacks: string[] = [];
    for (const tool of tools) {
      const converted = mcpToFunctionTool(tool as never, server, true);
      if (!converted.strict) fallbacks.push(tool.name);
    }
    expect(fallbacks).toEqual([]);
    // a strict bridge sends every property, null for the ones not given
    const set = mcpToFunctionTool(tools.find((t) => t.name === 'state_set') as never, server, true);
    const reply = await set.invoke(
      {} as never,
      JSON.stringify({ key: 'k', value: { a: 1 }, scope: null, ifVersion: null, ttlSeconds: null, idempotencyKey: null }),
    );
    expect(JSON.stringify(reply)).toMatch(/\\"version\\":1/);
    expect(await a.ok('state_get', { key: 'k', scope: null, maxBytes: null })).toMatchObject({ value: { a: 1 } });
    // steps shown as objects, sent with a null for each property not given; a step given as its text alone still works
    const create = mcpToFunctionTool(tools.find((t) => t.name === 'plan_create') as never, server, true);
    const none = { status: null, owner: null, blockedBy: null, note: null, activeForm: null };
    const steps = [
      { content: 'read', ...none },
      { ...none, content: 'write', blockedBy: ['s1'] },
    ];
    const created = await create.invoke({} as never, JSON.stringify({ title: 'p', steps, scope: null, idempotencyKey: null }));
    const { planId } = JSON.parse((created as { text: string }).text) as { planId: string };
    expect((await a.ok('plan_get', { planId })).plan.steps).toMatchObject([
      { id: 's1', content: 'read', status: 'pending' },
      { id: 's2', content: 'write', status: 'pending', blockedBy: ['s1'] },
    ]);
    expect(await a.ok('plan_create', { title: 'q', steps: ['one', { content: 'two' }] })).toMatchObject({ stepIds: ['s1', 's2'] });
  });
});
