import { describe, expect, it } from 'vitest';
import { StoreEventBus } from '../src/resource-bus.js';
import { agentsClosedAfterEach, memoryStore, sleep } from './helpers.js';

const agent = agentsClosedAfterEach();

describe('resources', () => {
  it('lists and reads keys and plans as blackboard:// URIs', async () => {
    const a = await agent({ config: { namespace: 'team', thread: 'T' } });
    await a.ok('state_set', { key: 'goal/main', value: { text: 'ship' } });
    await a.ok('state_set', { key: 'note', value: 'mine', scope: 'thread' });
    const { planId } = await a.ok('plan_create', { title: 'P', steps: ['a'] });
    const { resources } = await a.client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toContain('blackboard://team/global/goal%2Fmain');
    expect(uris).toContain('blackboard://team/thread%3AT/note');
    expect(uris).toContain(`blackboard://team/plans/${planId}`);
    const read = await a.client.readResource({ uri: 'blackboard://team/global/goal%2Fmain' });
    expect(read.contents[0]).toMatchObject({ mimeType: 'application/json', text: '{"text":"ship"}' });
    const plan = await a.client.readResource({ uri: `blackboard://team/plans/${planId}` });
    expect(JSON.parse((plan.contents[0] as { text: string }).text).title).toBe('P');
    await expect(a.client.readResource({ uri: 'blackboard://team/global/missing' })).rejects.toThrow(/not found/i);
    await expect(a.client.readResource({ uri: 'blackboard://other/global/goal%2Fmain' })).rejects.toThrow(/not found/i);
    expect(a.client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
  });

  it('resources/list stays compact: no description repeated per key (200 keys in well under 54 KB)', async () => {
    const a = await agent();
    await a.ok('state_batch', { ops: Array.from({ length: 100 }, (_, i) => ({ op: 'set', key: `item/${i}`, value: i })) });
    await a.ok('state_batch', { ops: Array.from({ length: 100 }, (_, i) => ({ op: 'set', key: `more/${i}`, value: i })) });
    const { resources } = await a.client.listResources();
    expect(resources.length).toBeGreaterThanOrEqual(100);
    expect(resources.every((r) => r.description === undefined)).toBe(true);
    const perKey = JSON.stringify(resources).length / resources.length;
    expect(perKey).toBeLessThan(130);
    const { resourceTemplates } = await a.client.listResourceTemplates();
    expect(resourceTemplates.find((t) => t.name === 'key')?.description).toMatch(/value as JSON/);
  });

  it('resources/subscribe sends notifications/resources/updated on a change by another agent', async () => {
    const store = memoryStore();
    const a = await agent({ store, era: 'legacy' });
    const b = await agent({ store });
    const updated: string[] = [];
    a.client.setNotificationHandler('notifications/resources/updated', (n) => {
      updated.push(n.params.uri);
      expect(n.params._meta?.['blackboard/revision']).toBeGreaterThan(0);
    });
    const uri = 'blackboard://_default/global/status';
    await a.client.subscribeResource({ uri });
    await sleep(20);
    await b.ok('state_set', { key: 'status', value: 'one' });
    await sleep(50);
    await b.ok('state_set', { key: 'status', value: 'two' });
    await sleep(50);
    expect(updated).toEqual([uri, uri]);
    await a.client.unsubscribeResource({ uri });
    await b.ok('state_set', { key: 'status', value: 'three' });
    await sleep(50);
    expect(updated).toHaveLength(2);
  });

  it('the listen bus follows a namespace while a stream holds it, and stops once the last one lets go', async () => {
    const store = memoryStore();
    const bus = new StoreEventBus(store);
    const heard: string[] = [];
    const unsubscribe = bus.subscribe((event) => {
      if (event.kind === 'resource_updated') heard.push(event.uri);
    });
    try {
      const one = await agent({ store, config: { namespace: 'one' } });
      const two = await agent({ store, config: { namespace: 'two' } });
      const heardOf = async (uri: string): Promise<void> => {
        for (let i = 0; !heard.includes(uri); i++) {
          expect(i, `${uri} heard`).toBeLessThan(200);
          await sleep(10);
        }
      };
      const first = await bus.hold('one');
      const second = await bus.hold('one');
      await bus.hold('two');
      await one.ok('state_set', { key: 'a', value: 1 });
      await heardOf('blackboard://one/global/a');
      first();
      first(); // a stream lets go once, however often its close is reported
      await one.ok('state_set', { key: 'b', value: 1 });
      await heardOf('blackboard://one/global/b');
      second();
      await sleep(20);
      await one.ok('state_set', { key: 'c', value: 1 });
      await two.ok('state_set', { key: 'c', value: 1 });
      await heardOf('blackboard://two/global/c');
      await sleep(50);
      expect(heard).not.toContain('blackboard://one/global/c');
    } finally {
      unsubscribe();
      bus.stop();
    }
  });

  it('a malformed URI is an invalid-params error, not an internal error', async () => {
    const a = await agent({ era: 'legacy' });
    for (const uri of [
      'blackboard://_default/global/%E0%A4%A',
      'blackboard://_default/%ZZ/k',
      'blackboard://_default/planet/k',
      'blackboard://_default/plans/nope',
    ]) {
      await expect(a.client.readResource({ uri }), uri).rejects.toMatchObject({ code: -32602 });
      await expect(a.client.subscribeResource({ uri }), uri).rejects.toMatchObject({ code: -32602 });
    }
  });
});
