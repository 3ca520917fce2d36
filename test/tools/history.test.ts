import { LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore, sleep } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('history tools', () => {
  it('appends with increasing seq, lists with afterSeq/limit/kind, prunes keeping the last N', async () => {
    const a = await agent({ config: { agent: 'h' } });
    for (let i = 1; i <= 12; i++) {
      expect(await a.ok('history_append', { kind: i % 3 === 0 ? 'decision' : 'tool_call', content: `e${i}`, ...(i === 1 ? { data: { x: 1 } } : {}) })).toEqual({ seq: i });
    }
    const first = await a.ok('history_list', { limit: 5 });
    expect(first.entries.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(first.entries[0]).toMatchObject({ kind: 'tool_call', content: 'e1', data: { x: 1 }, by: 'h', at: expect.any(String) });
    expect(first.nextAfterSeq).toBe(5);
    const next = await a.ok('history_list', { afterSeq: 5, limit: 100 });
    expect(next.entries.map((e: { seq: number }) => e.seq)).toEqual([6, 7, 8, 9, 10, 11, 12]);
    expect(next.nextAfterSeq).toBeUndefined();
    const decisions = await a.ok('history_list', { kind: 'decision' });
    expect(decisions.entries.map((e: { content: string }) => e.content)).toEqual(['e3', 'e6', 'e9', 'e12']);
    expect(await a.ok('history_prune', { keepLast: 4 })).toEqual({ removed: 8 });
    expect((await a.ok('history_list', {})).entries.map((e: { seq: number }) => e.seq)).toEqual([9, 10, 11, 12]);
    expect(await a.ok('history_append', { kind: 'note', content: 'after prune' })).toEqual({ seq: 13 });
    expect(await a.ok('history_prune', { keepLast: 100 })).toEqual({ removed: 0 });
  });

  it('is per thread, and checks its arguments', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'A' } });
    const b = await agent({ store, config: { thread: 'B' } });
    await a.ok('history_append', { kind: 'note', content: 'a' });
    expect((await b.ok('history_list', {})).entries).toEqual([]);
    expect((await a.err('history_append', { kind: 'Bad Kind', content: 'x' })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('history_list', { limit: 0 })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('history_prune', { keepLast: -1 })).code).toBe('INVALID_ARGUMENT');
  });

  it('concurrent appends get distinct sequence numbers', async () => {
    const a = await agent();
    const seqs = await Promise.all(Array.from({ length: 40 }, (_, i) => a.ok('history_append', { kind: 'x', content: String(i) })));
    expect(new Set(seqs.map((s) => s.seq)).size).toBe(40);
  });
});

describe('signal tool', () => {
  it('sends a signal as a 2026-07-28 log message when the request asks for logs in its _meta', async () => {
    const a = await agent({ config: { agent: 'thinker' }, era: 'modern' });
    const logs: unknown[] = [];
    a.client.setNotificationHandler('notifications/message', (n) => void logs.push(n.params));
    await a.client.callTool({ name: 'signal', arguments: { kind: 'commit' } });
    const asked = await a.client.callTool({ name: 'signal', arguments: { kind: 'uncertain' }, _meta: { [LOG_LEVEL_META_KEY]: 'info' } });
    await sleep(20);
    expect(logs).toEqual([{ level: 'warning', logger: 'mcp-blackboard.signal', data: asked.structuredContent }]);
  });

  it('records the signal in history and sends it as an MCP logging message', async () => {
    const a = await agent({ config: { agent: 'thinker' }, era: 'legacy' });
    const logs: unknown[] = [];
    a.client.setNotificationHandler('notifications/message', (n) => void logs.push(n.params));
    await a.client.setLoggingLevel('info');
    const event = await a.ok('signal', { kind: 'uncertain', confidence: 0.3, note: 'two sources disagree' });
    expect(event).toMatchObject({ kind: 'uncertain', confidence: 0.3, note: 'two sources disagree', agent: 'thinker', seq: 1 });
    await sleep(20);
    expect(logs).toEqual([{ level: 'warning', logger: 'mcp-blackboard.signal', data: event }]);
    const h = await a.ok('history_list', { kind: 'signal' });
    expect(h.entries[0]).toMatchObject({ content: 'uncertain', data: { confidence: 0.3, note: 'two sources disagree' } });
    expect((await a.err('signal', { kind: 'commit', confidence: 1.5 })).code).toBe('INVALID_ARGUMENT');
  });

  it('declares the logging capability', async () => {
    const a = await agent();
    expect(a.client.getServerCapabilities()?.logging).toBeDefined();
  });
});
