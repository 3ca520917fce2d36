import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('scratchpad tools', () => {
  it('stores variables, observations and failed approaches, and renders a compact context', async () => {
    const a = await agent();
    expect(await a.ok('scratchpad_read')).toEqual({ variables: {}, observations: [], failedApproaches: [], context: '(scratchpad is empty)' });
    expect(await a.ok('scratchpad_store', { name: 'city', value: 'Paris' })).toEqual({ name: 'city', variables: 1 });
    await a.ok('scratchpad_store', { name: 'big', value: { text: 'x'.repeat(500) } });
    expect(await a.ok('scratchpad_observe', { observation: 'the API returns 404 for old ids' })).toEqual({ observations: 1 });
    expect(await a.ok('scratchpad_fail', { approach: 'grep the logs', reason: 'logs rotated' })).toEqual({ failedApproaches: 1 });
    const pad = await a.ok('scratchpad_read');
    expect(pad.variables).toEqual({ city: 'Paris', big: { text: 'x'.repeat(500) } });
    expect(pad.observations).toEqual(['the API returns 404 for old ids']);
    expect(pad.failedApproaches).toEqual([{ approach: 'grep the logs', reason: 'logs rotated' }]);
    expect(pad.context).toContain('- city = "Paris"');
    expect(pad.context).toContain('1. the API returns 404 for old ids');
    expect(pad.context).toContain('Failed approaches (do not retry):\n- grep the logs — logs rotated');
    expect(pad.context.length).toBeLessThan(600);
    expect(await a.ok('scratchpad_clear')).toEqual({ cleared: true });
    expect((await a.ok('scratchpad_read')).variables).toEqual({});
  });

  it('belongs to the thread\'s current run: shared by its connections, fresh after run_start, not seen by other threads', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'T' } });
    const b = await agent({ store, config: { thread: 'T' } });
    const other = await agent({ store, config: { thread: 'U' } });
    await a.ok('scratchpad_observe', { observation: 'shared' });
    expect((await b.ok('scratchpad_read')).observations).toEqual(['shared']);
    expect((await other.ok('scratchpad_read')).observations).toEqual([]);
    await b.ok('run_start', {});
    // a follows b's run_start on the same thread
    expect((await a.ok('scratchpad_read')).observations).toEqual([]);
    expect((await a.ok('whoami')).run).toBe((await b.ok('whoami')).run);
  });

  it('concurrent observations all land; bad input is refused', async () => {
    const a = await agent();
    await Promise.all(Array.from({ length: 30 }, (_, i) => a.ok('scratchpad_observe', { observation: `o${i}` })));
    expect((await a.ok('scratchpad_read')).observations).toHaveLength(30);
    expect((await a.err('scratchpad_observe', { observation: '  ' })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('scratchpad_store', { name: '', value: 1 })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('scratchpad_fail', { approach: '' })).code).toBe('INVALID_ARGUMENT');
  });

  it('is bounded by the value size limit', async () => {
    const a = await agent({ config: { maxValueBytes: 2000 } });
    await a.ok('scratchpad_observe', { observation: 'x'.repeat(1500) });
    expect((await a.err('scratchpad_observe', { observation: 'y'.repeat(1000) })).code).toBe('VALUE_TOO_LARGE');
    expect((await a.ok('scratchpad_read')).observations).toHaveLength(1);
  });
});
