// Every record a service stores belongs to a family declared in the registry, and decodes with that family's schema.
import { describe, expect, it } from 'vitest';
import { FAMILIES, declarations } from '../src/families/registry.js';
import { SCHEMAS } from '../src/families/schemas.js';
import { namespaceRange, parseKey } from '../src/keyspace.js';
import { agentsClosedAfterEach } from './helpers.js';

const connect = agentsClosedAfterEach();

describe('the record family registry', () => {
  it('knows every family the tools store, and each record decodes with its declared schema', async () => {
    const a = await connect({
      config: { namespace: 'fam', maxIterations: 5, budgets: { tokens: 100 } },
      identity: { thread: 'worker', agent: 'w1' },
    });
    await a.ok('run_start', {});
    await a.ok('state_set', { key: 'k', value: 1, scope: 'thread' });
    const plan = await a.ok('plan_create', { title: 't', steps: ['one', 'two'] });
    await a.ok('plan_claim', { planId: plan.planId ?? plan.plan?.planId });
    // (the scratchpad's write tool is being renamed: either name will do here)
    await a
      .ok('scratchpad_store', { name: 'city', value: 'Paris' })
      .catch(() => a.ok('scratchpad_write', { kind: 'variable', name: 'city', value: 'Paris' }));
    await a.ok('budget_step', { name: 'tokens', amount: 3 });
    await a.ok('agent_state_set', { state: 'running' });
    await a.ok('history_append', { kind: 'note', content: 'hello' });
    await a.ok('signal', { kind: 'commit', note: 'ok' });
    await a.ok('final_answer_set', { content: 'done' });
    await a.ok('checkpoint_save', { label: 'c1' });
    await a.ok('run_end', { status: 'finished' });

    const { lo, hi } = namespaceRange('fam');
    const { entries } = await a.store.list({ lo, hi, limit: 10_000 });
    const stored = new Set<string>();
    const known = new Map(declarations().map((f) => [f.stored, f.name]));
    for (const [key, entry] of entries) {
      const parsed = parseKey('fam', key);
      expect(parsed, key).toBeDefined();
      if (parsed?.kind !== 'family') continue;
      stored.add(parsed.family);
      const name = known.get(parsed.family);
      expect(name, `stored family "${parsed.family}" is not declared in src/families/registry.ts`).toBeDefined();
      const schema = SCHEMAS[name!];
      if (schema) expect(schema.safeParse(entry.value).success, `${parsed.family} record ${JSON.stringify(entry.value)}`).toBe(true);
    }
    // The workload reached the families a thread's work leaves behind (so the check above had something to check).
    for (const f of [
      FAMILIES.plan,
      FAMILIES.planIndex,
      FAMILIES.scratchpad,
      FAMILIES.budget,
      FAMILIES.history,
      FAMILIES.final,
      FAMILIES.lifecycle,
      FAMILIES.historySeq,
      FAMILIES.thread,
      FAMILIES.checkpoint,
      FAMILIES.checkpointIndex,
    ]) {
      expect([...stored]).toContain(f.stored);
    }
  });

  it('declares each stored name once', () => {
    const names = declarations().map((f) => f.stored);
    expect(new Set(names).size).toBe(names.length);
  });
});
