import { LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore, sleep } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('history tools', () => {
  it('appends with increasing seq, lists with afterSeq/limit/kind, prunes keeping the last N', async () => {
    const a = await agent({ config: { agent: 'h' } });
    for (let i = 1; i <= 12; i++) {
      expect(
        await a.ok('history_append', {
          kind: i % 3 === 0 ? 'decision' : 'tool_call',
          content: `e${i}`,
          ...(i === 1 ? { data: { x: 1 } } : {}),
        }),
      ).toEqual({ seq: i });
    }
    const seqs = (page: { entries: Array<{ seq: number }> }): number[] => page.entries.map((e) => e.seq);
    // newest first by default, paged with cursor
    const newest = await a.ok('history_list', { limit: 5 });
    expect(seqs(newest)).toEqual([12, 11, 10, 9, 8]);
    const older = await a.ok('history_list', { limit: 5, cursor: newest.nextCursor });
    expect(seqs(older)).toEqual([7, 6, 5, 4, 3]);
    const oldest = await a.ok('history_list', { limit: 5, cursor: older.nextCursor });
    expect(seqs(oldest)).toEqual([2, 1]);
    expect(oldest.nextCursor).toBeUndefined();
    // oldest first: following with afterSeq
    const first = await a.ok('history_list', { limit: 5, order: 'asc' });
    expect(seqs(first)).toEqual([1, 2, 3, 4, 5]);
    expect(first.entries[0]).toMatchObject({ kind: 'tool_call', content: 'e1', data: { x: 1 }, by: 'h', at: expect.any(String) });
    expect(first.nextAfterSeq).toBe(5);
    expect(seqs(await a.ok('history_list', { limit: 5, order: 'asc', cursor: first.nextCursor }))).toEqual([6, 7, 8, 9, 10]);
    const next = await a.ok('history_list', { afterSeq: 5, limit: 100, order: 'asc' });
    expect(seqs(next)).toEqual([6, 7, 8, 9, 10, 11, 12]);
    expect(next.nextCursor).toBeUndefined();
    expect(seqs(await a.ok('history_list', { afterSeq: 9 }))).toEqual([12, 11, 10]);
    const decisions = await a.ok('history_list', { kind: 'decision', limit: 3 });
    expect(decisions.entries.map((e: { content: string }) => e.content)).toEqual(['e12', 'e9', 'e6']);
    expect(
      (await a.ok('history_list', { kind: 'decision', cursor: decisions.nextCursor })).entries.map((e: { content: string }) => e.content),
    ).toEqual(['e3']);
    expect((await a.err('history_list', { kind: 'tool_call', cursor: decisions.nextCursor })).message).toMatch(/different listing/);
    expect(await a.ok('history_prune', { keepLast: 4 })).toEqual({ removed: 8 });
    expect(seqs(await a.ok('history_list', {}))).toEqual([12, 11, 10, 9]);
    expect(await a.ok('history_append', { kind: 'note', content: 'after prune' })).toEqual({ seq: 13 });
    expect(await a.ok('history_prune', { keepLast: 100 })).toEqual({ removed: 0 });
  });

  it("is per thread, a parent reads a child's with thread, and it checks its arguments", async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'A' } });
    const b = await agent({ store, config: { thread: 'B', parentThread: 'A' } });
    await a.ok('history_append', { kind: 'note', content: 'a' });
    expect((await b.ok('history_list', {})).entries).toEqual([]);
    await b.ok('history_append', { kind: 'note', content: 'from the child' });
    expect((await a.ok('history_list', { thread: 'B' })).entries).toMatchObject([{ content: 'from the child' }]);
    expect((await a.err('history_append', { kind: 'Bad Kind', content: 'x' })).code).toBe('INVALID_ARGUMENT');
    // the events the server writes itself cannot be forged
    for (const kind of ['signal', 'run_end', 'plan_reassign']) {
      const forged = await a.err('history_append', { kind, content: 'finished', data: { run: 'r' } });
      expect(forged).toMatchObject({ code: 'INVALID_ARGUMENT', details: { kind } });
      expect(forged.message).toMatch(/one the server writes itself/);
    }
    expect((await a.ok('history_list', {})).entries.map((e: { kind: string }) => e.kind)).toEqual(['note']);
    expect((await a.err('history_list', { limit: 0 })).code).toBe('INVALID_ARGUMENT');
    expect((await a.err('history_prune', { keepLast: -1 })).code).toBe('INVALID_ARGUMENT');
  });

  it('a checkpoint restore takes the events after the save away, but never their numbers: a follower misses nothing', async () => {
    const a = await agent({ config: { thread: 'R' } });
    for (let i = 1; i <= 3; i++) await a.ok('history_append', { kind: 'note', content: `kept ${i}` });
    const early = await a.ok('checkpoint_save', {});
    for (let i = 4; i <= 6; i++) await a.ok('history_append', { kind: 'note', content: `undone ${i}` });
    const late = await a.ok('checkpoint_save', {});
    await a.ok('checkpoint_restore', { checkpointId: early.checkpointId });
    expect((await a.ok('history_list', { order: 'asc' })).entries.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3]);
    // a follower that had read up to 6 before the restore sees the next event
    expect(await a.ok('history_append', { kind: 'note', content: 'after the restore' })).toEqual({ seq: 7 });
    expect((await a.ok('history_list', { afterSeq: 6 })).entries).toMatchObject([{ seq: 7, content: 'after the restore' }]);
    // nor back to a later checkpoint's: its events come back with their numbers, and the next is after the highest
    await a.ok('checkpoint_restore', { checkpointId: late.checkpointId });
    expect((await a.ok('history_list', { order: 'asc' })).entries.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await a.ok('history_append', { kind: 'note', content: 'after the second restore' })).toEqual({ seq: 8 });
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
    // a long note is kept whole in history; the reply and the log message echo its start
    logs.length = 0;
    const long = 'n'.repeat(100_000);
    const echoed = await a.ok('signal', { kind: 'uncertain', note: long });
    expect(echoed).toMatchObject({ noteTruncated: true });
    expect(echoed.note.length).toBeLessThan(2100);
    await sleep(20);
    expect(JSON.stringify(logs).length).toBeLessThan(3000);
    const kept = await a.bb.services.history.list({ kind: 'signal', limit: 1 });
    expect((kept.entries[0].data as { note: string }).note).toBe(long);
  });

  it('declares the logging capability', async () => {
    const a = await agent();
    expect(a.client.getServerCapabilities()?.logging).toBeDefined();
  });
});
