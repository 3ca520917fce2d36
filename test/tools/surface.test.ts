import type { Tool } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { renderMentions } from '../../src/tool-mentions.js';
import { agentsClosedAfterEach, type Connected } from '../helpers.js';

const agent = agentsClosedAfterEach();

/** Every `description` anywhere in a JSON schema. */
function schemaDescriptions(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(schemaDescriptions);
  if (node === null || typeof node !== 'object') return [];
  return Object.entries(node).flatMap(([k, v]) => (k === 'description' && typeof v === 'string' ? [v] : schemaDescriptions(v)));
}

/** Every text a model reads from the listing and the instructions. */
async function texts(a: Connected): Promise<{ tools: Tool[]; all: string[] }> {
  const { tools } = await a.client.listTools();
  const all = [a.client.getInstructions() ?? ''];
  for (const t of tools) all.push(t.description ?? '', ...schemaDescriptions(t.inputSchema), ...schemaDescriptions(t.outputSchema));
  return { tools, all };
}

// Sizes, profiles and the schema rules every model API accepts: test/tools/profiles.test.ts.
describe('the tool list', () => {
  it('no $schema, no ±2^53 integer bounds; real bounds as minimum/maximum; argument descriptions short', async () => {
    const a = await agent({ config: { allowBudgetAdmin: true } });
    const { tools } = await a.client.listTools();
    const text = JSON.stringify(tools);
    expect(text).not.toContain('$schema');
    expect(text).not.toContain(String(Number.MAX_SAFE_INTEGER));
    for (const tool of tools) {
      for (const [name, prop] of Object.entries(tool.inputSchema.properties ?? {})) {
        expect(((prop as { description?: string }).description ?? '').length, `${tool.name}.${name}`).toBeLessThanOrEqual(80);
      }
    }
    expect(a.client.getInstructions()).toMatch(/idempotencyKey/);
    const prop = (tool: string, name: string) => tools.find((t) => t.name === tool)!.inputSchema.properties![name];
    expect(prop('state_list', 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
    expect(prop('state_snapshot', 'maxBytes')).toMatchObject({ type: 'integer', minimum: 64, maximum: 1024 * 1024 });
    expect(prop('watch', 'waitMs')).toMatchObject({ type: 'integer', minimum: 0, maximum: 600_000 });
    expect(prop('state_set', 'ifVersion')).toEqual({ type: 'integer', minimum: 0, description: expect.any(String) });
    expect(prop('history_list', 'limit')).toMatchObject({ minimum: 1, maximum: 500 });
  });

  it('initialize advertises only what is true: a fixed tool list, resources with subscribe, logging', async () => {
    const caps = (await agent()).client.getServerCapabilities();
    expect(caps?.tools?.listChanged).not.toBe(true);
    expect(caps?.resources).toEqual({ subscribe: true, listChanged: false });
    expect(caps?.logging).toEqual({});
    expect(Object.keys(caps ?? {}).sort()).toEqual(['logging', 'resources', 'tools']);
  });
});

// Tool names a text could mention, from a server with every family (and the admin tools).
async function allToolNames(): Promise<string[]> {
  return (await (await agent({ config: { allowBudgetAdmin: true } })).client.listTools()).tools.map((t) => t.name);
}

/** The tool names a text mentions other than as registered: bare base names, or any name this server lacks. */
function strayMentions(text: string, all: string[], registered: string[]): string[] {
  const stray: string[] = [];
  const words = text.match(/[A-Za-z0-9_]+/g) ?? [];
  for (const word of words) {
    if (registered.includes(word)) continue;
    // a word that is a tool's base name (or a prefixed one) and is not registered here names a missing tool
    if (all.includes(word) || all.some((name) => word.endsWith(`_${name}`))) stray.push(word);
  }
  if (text.includes('{tool:')) stray.push('{tool:…} left unrendered');
  return stray;
}

describe('texts name tools exactly as registered', () => {
  const configs = [
    { label: '--namespace team', config: { namespace: 'team', allowBudgetAdmin: true } },
    { label: '--tools plan,finalizer', config: { tools: ['plan', 'finalizer'] } },
    { label: '--tools kv', config: { tools: ['kv'] } },
    { label: '--namespace team --tools plan,finalizer', config: { namespace: 'team', tools: ['plan', 'finalizer'] } },
  ];
  it.each(configs)('$label: instructions, every description, and sample errors', async ({ config }) => {
    const all = await allToolNames();
    const a = await agent({ config: config as never });
    const { tools, all: read } = await texts(a);
    const registered = tools.map((t) => t.name);
    const errors: string[] = [];
    const has = (name: string) => registered.includes(a.bb.tools.find((t) => t.endsWith(name)) ?? '');
    if (has('plan_get')) {
      errors.push((await a.err('plan_get', { planId: 'plan-000000000000' })).message);
      errors.push((await a.err('plan_get', { planId: 'nope' })).message);
      const { planId } = await a.ok('plan_create', { title: 'T', steps: ['a', { content: 'b', blockedBy: ['s1'] }] });
      errors.push((await a.err('plan_claim', { planId, stepId: 's2' })).message);
    }
    if (has('final_answer_set')) {
      await a.ok('final_answer_set', { content: 'one' });
      errors.push((await a.err('final_answer_set', { content: 'two' })).message);
    }
    if (has('state_update')) {
      await a.ok('state_set', { key: 'n', value: 'text' });
      errors.push((await a.err('state_update', { key: 'n', op: 'increment', value: 1 })).message);
      errors.push((await a.err('state_get', { key: 'k', scope: 'agent_type' })).message);
    }
    if (has('agent_state_set')) {
      await a.ok('agent_state_set', { state: 'running' });
      await a.ok('agent_state_set', { state: 'finished' });
      errors.push((await a.err('agent_state_set', { state: 'running' })).message);
    }
    if (has('checkpoint_restore')) errors.push((await a.err('checkpoint_restore', { checkpointId: 'x' })).message);
    expect(errors.length).toBeGreaterThan(1);
    for (const text of [...read, ...errors]) expect(strayMentions(text, all, registered), text).toEqual([]);
    // mentions that survive are prefixed
    if (config.namespace) expect(read.join(' ') + errors.join(' ')).toMatch(/team_plan_/);
  });

  it('what names a lacking tool goes (its parenthesis, else its clause, else its sentence); what a tool does stays', async () => {
    const only =
      (...names: string[]) =>
      (name: string) =>
        names.includes(name) ? `ns_${name}` : undefined;
    const render = (text: string) => renderMentions(text, only('state_get', 'watch'));
    expect(render('List keys (values: {tool:state_snapshot}). Returns key.')).toBe('List keys. Returns key.');
    expect(render('Read a key; to wait: {tool:watch}. Counters: {tool:state_update}.')).toBe('Read a key; to wait: ns_watch.');
    expect(render('Read (cut; detail "full"); to follow: {tool:plan_get}, scope plan.')).toBe('Read (cut; detail "full").');
    expect(render('Use {tool:watch} to wait, and {tool:state_changes} to follow every change.')).toBe('Use ns_watch to wait.');
    expect(render('Save it for {tool:checkpoint_restore}. Returns id.')).toBe('Returns id.');
    // through a server: the agent profile lacks state_snapshot, state_changes and state_batch
    const a = await agent({ config: { tools: ['agent'] } });
    const { tools } = await a.client.listTools();
    expect(tools.find((t) => t.name === 'state_list')?.description).toBe('List keys. Returns key, version, bytes each; nextCursor.');
    const instructions = a.client.getInstructions() ?? '';
    expect(instructions).toMatch(/Use state_update for counters, lists and merges\. Use watch to wait for a change instead of polling\./);
    expect(instructions).toMatch(/Read with state_get or state_list\./);
    expect(instructions).not.toMatch(/state_snapshot|state_batch|state_changes/);
    // a tool whose sibling is left out still says what it does
    const save = await agent({ config: { tools: ['checkpoint_save'] } });
    expect((await save.client.listTools()).tools[0].description).toBe('Save thread state. Returns id, size.');
  });

  it('a sentence is judged whole: a full stop inside parentheses or after "e.g." does not end it', async () => {
    const only = (name: string) => (name === 'message_send' ? name : undefined);
    expect(renderMentions('Read a key (e.g. "a"; see {tool:inbox}). Returns it.', only)).toBe('Read a key. Returns it.');
    expect(renderMentions('Pass an id, e.g. "m1" from {tool:inbox}. Returns it.', only)).toBe('Returns it.');
    const a = await agent({ config: { tools: ['message_send'] } });
    const error = await a.err('message_send', { to: 'all', content: 'x', replyTo: 'bad' });
    expect(error.message).toBe('replyTo must be a message id such as "m12", got "bad".');
  });

  it('an error keeps what happened and what to do when the tool it names is left out', async () => {
    const plans = await agent({ config: { tools: ['plan_create', 'plan_update', 'plan_step'] } });
    const { planId } = await plans.ok('plan_create', { title: 'T', steps: ['a', { content: 'b', blockedBy: ['s1'] }] });
    expect((await plans.err('plan_update', { planId, steps: ['x'] })).message).toMatch(/^Replacing the steps needs ifVersion, the version/);
    const blocked = await plans.err('plan_step', { planId, stepId: 's2', status: 'in_progress' });
    expect(blocked.message).toMatch(/Finish those first\.$/);
    const mail = await agent({ config: { tools: ['message_send'] } });
    expect((await mail.err('message_send', { to: 'nobody', content: 'x' })).message).toMatch(/pass waitForRecipient: true\.$/);
    expect((await mail.err('message_send', { to: 'nobody', content: 'x'.repeat(20_000) })).message).toMatch(
      /Nothing was sent: send it shorter or in parts\.$/,
    );
  });

  it('a sentence about a tool the server lacks is left out, the rest stays', async () => {
    const a = await agent({ config: { tools: ['finalizer'] } });
    await a.ok('final_answer_set', { content: 'one' });
    const error = await a.err('final_answer_set', { content: 'two' });
    expect(error.message).toBe('This run already has a final answer; it cannot be replaced. Use the answer in details.answer.');
    const full = await agent({ config: { namespace: 'team' } });
    await full.ok('final_answer_set', { content: 'one' });
    expect((await full.err('final_answer_set', { content: 'two' })).message).toMatch(
      /details.answer. Add anything further with team_history_append\.$/,
    );
  });
});
