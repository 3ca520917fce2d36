import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('scratchpad tools', () => {
  it('scratchpad_write keeps variables, observations and failed approaches; scratchpad_read renders a compact context', async () => {
    const a = await agent();
    expect(await a.ok('scratchpad_read')).toEqual({
      variables: {},
      observations: [],
      failedApproaches: [],
      context: '(scratchpad is empty)',
    });
    expect(await a.ok('scratchpad_write', { kind: 'variable', name: 'city', value: 'Paris' })).toEqual({
      kind: 'variable',
      name: 'city',
      variables: 1,
      observations: 0,
      failedApproaches: 0,
    });
    await a.ok('scratchpad_write', { kind: 'variable', name: 'big', value: { text: 'x'.repeat(500) } });
    expect(await a.ok('scratchpad_write', { kind: 'observation', value: 'the API returns 404 for old ids' })).toMatchObject({
      observations: 1,
    });
    expect(await a.ok('scratchpad_write', { kind: 'failed_approach', value: 'grep the logs: logs rotated' })).toMatchObject({
      failedApproaches: 1,
      variables: 2,
    });
    const pad = await a.ok('scratchpad_read');
    expect(pad.variables).toEqual({ city: 'Paris', big: { text: 'x'.repeat(500) } });
    expect(pad.observations).toEqual(['the API returns 404 for old ids']);
    expect(pad.failedApproaches).toEqual([{ approach: 'grep the logs: logs rotated' }]);
    expect(pad.context).toContain('- city = "Paris"');
    expect(pad.context).toContain('1. the API returns 404 for old ids');
    expect(pad.context).toContain('Failed approaches (do not retry):\n- grep the logs: logs rotated');
    expect(pad.context.length).toBeLessThan(600);
    await a.ok('run_start', {});
    expect((await a.ok('scratchpad_read')).variables).toEqual({});
  });

  it('context cuts a long value at 200 characters, never inside one (an emoji is one character)', async () => {
    const a = await agent();
    await a.ok('scratchpad_write', { kind: 'variable', name: 'faces', value: '😀'.repeat(300) });
    await a.ok('scratchpad_write', { kind: 'variable', name: 'few', value: '😀'.repeat(150) });
    const { context } = await a.ok('scratchpad_read');
    const lines = context.split('\n');
    expect(lines[1]).toBe(`- faces = "${'😀'.repeat(199)}…`);
    expect(lines[2]).toBe(`- few = "${'😀'.repeat(150)}"`);
    expect(context).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });

  it("belongs to the thread's current run: shared by its connections, fresh after run_start, not seen by other threads", async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'T' } });
    const b = await agent({ store, config: { thread: 'T' } });
    const other = await agent({ store, config: { thread: 'U' } });
    await a.ok('scratchpad_write', { kind: 'observation', value: 'shared' });
    expect((await b.ok('scratchpad_read')).observations).toEqual(['shared']);
    expect((await other.ok('scratchpad_read')).observations).toEqual([]);
    await b.ok('run_start', {});
    // a follows b's run_start on the same thread
    expect((await a.ok('scratchpad_read')).observations).toEqual([]);
    expect((await a.ok('whoami')).run).toBe((await b.ok('whoami')).run);
  });

  it('a read fits 16 KiB by default: the oldest observations, then variables, go first; failed approaches stay; maxBytes reads more', async () => {
    const a = await agent();
    await a.ok('scratchpad_write', { kind: 'failed_approach', value: 'retry the flaky endpoint: it stays down' });
    for (let i = 0; i < 5; i++) await a.ok('scratchpad_write', { kind: 'variable', name: `v${i}`, value: 'y'.repeat(1000) });
    for (let i = 0; i < 40; i++) await a.ok('scratchpad_write', { kind: 'observation', value: `observation ${i} ${'x'.repeat(500)}` });
    const bounded = await a.raw('scratchpad_read', {});
    expect(Buffer.byteLength(JSON.stringify(bounded.structuredContent))).toBeLessThanOrEqual(16 * 1024);
    const pad = bounded.structuredContent as {
      truncated?: boolean;
      failedApproaches: unknown[];
      variables: Record<string, unknown>;
      observations: string[];
      omitted: Record<string, number>;
      context: string;
    };
    expect(pad.truncated).toBe(true);
    expect(pad.failedApproaches).toEqual([{ approach: 'retry the flaky endpoint: it stays down' }]);
    expect(Object.keys(pad.variables)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
    // the newest observations are kept, in order; the count of the left-out ones is exact
    expect(pad.observations.at(-1)).toMatch(/^observation 39 /);
    expect(pad.omitted).toEqual({ variables: 0, observations: 40 - pad.observations.length, failedApproaches: 0 });
    expect(pad.omitted.observations).toBeGreaterThan(0);
    expect(pad.context).toMatch(/\((\d+) older notes left out to fit 16384 bytes; read with a larger maxBytes to see them\)$/);
    const whole = await a.ok('scratchpad_read', { maxBytes: 1024 * 1024 });
    expect(whole.truncated).toBeUndefined();
    expect(whole.observations).toHaveLength(40);
    // a tiny page keeps the failed approach longest
    const tiny = await a.ok('scratchpad_read', { maxBytes: 600 });
    expect(tiny.observations).toEqual([]);
    expect(tiny.variables).toEqual({});
    expect(tiny.failedApproaches).toHaveLength(1);
    // a page too small for any note says they were all left out, never that the scratchpad is empty
    const none = await a.ok('scratchpad_read', { maxBytes: 200 });
    expect(none).toMatchObject({ observations: [], variables: {}, failedApproaches: [], truncated: true });
    expect(none.context).toBe('(all 46 notes left out to fit 200 bytes; read with a larger maxBytes to see them)');
  });

  it('concurrent observations all land; bad input is refused', async () => {
    const a = await agent();
    await Promise.all(Array.from({ length: 30 }, (_, i) => a.ok('scratchpad_write', { kind: 'observation', value: `o${i}` })));
    expect((await a.ok('scratchpad_read')).observations).toHaveLength(30);
    expect((await a.err('scratchpad_write', { kind: 'observation', value: '  ' })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('scratchpad_write', { kind: 'variable', name: '', value: 1 })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('scratchpad_write', { kind: 'failed_approach', value: '' })).code).toBe('INVALID_ARGUMENT');
    const nameless = await a.err('scratchpad_write', { kind: 'variable', value: 1 });
    expect(nameless.message).toMatch(/needs a name: scratchpad_write\(/);
    expect(nameless.details).toMatchObject({ path: 'name' });
    expect((await a.err('scratchpad_write', { kind: 'observation', name: 'n', value: 'x' })).message).toMatch(
      /name is only for kind "variable"/,
    );
    expect((await a.err('scratchpad_write', { kind: 'note', value: 'x' })).details).toMatchObject({ path: 'kind' });
    expect((await a.ok('scratchpad_read')).variables).toEqual({});
    // the tool is named as registered: with its namespace prefix
    const ns = await agent({ config: { namespace: 'ns1' } });
    expect((await ns.err('scratchpad_write', { kind: 'variable', value: 1 })).message).toMatch(/needs a name: ns1_scratchpad_write\(/);
  });

  it('is bounded by the value size limit, and says so of the scratchpad, not of the value passed', async () => {
    const a = await agent({ config: { maxValueBytes: 2000, namespace: 'ns' } });
    await a.ok('scratchpad_write', { kind: 'observation', value: 'x'.repeat(1500) });
    const error = await a.err('scratchpad_write', { kind: 'observation', value: 'y'.repeat(1000) });
    expect(error.code).toBe('VALUE_TOO_LARGE');
    expect(error.message).toMatch(
      /^This run's scratchpad would hold \d+ bytes with this entry, over its limit of 2000\. Nothing was written/,
    );
    expect(error.message).toMatch(/ns_state_set in scope run\)\.$/);
    expect(error.message).not.toMatch(/several keys/);
    expect(error.details).toMatchObject({ maxValueBytes: 2000 });
    expect((await a.ok('scratchpad_read')).observations).toHaveLength(1);
  });
});
