import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { EventLog } from '../../src/transports/event-store.js';

// The process-wide store of resumable SSE events: bounded in count, bytes and age; each session sees only its own.
const note = (n: number, pad = ''): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { n, pad } });

async function replay(store: ReturnType<EventLog['forSession']>, after: string): Promise<number[]> {
  const got: number[] = [];
  await store.replayEventsAfter(after, { send: async (_id, m) => void got.push((m as { params: { n: number } }).params.n) });
  return got;
}

describe('EventLog', () => {
  it('replays the events of one stream after an id, in order, and nothing of other streams', async () => {
    const log = new EventLog();
    const a = log.forSession();
    const first = await a.storeEvent('s1', note(1));
    await a.storeEvent('s2', note(100));
    await a.storeEvent('s1', note(2));
    await a.storeEvent('s1', note(3));
    expect(await replay(a, first)).toEqual([2, 3]);
    expect(await a.getStreamIdForEventId!(first)).toBe('s1');
  });

  it("a session cannot see or replay another session's events, even for the same stream id", async () => {
    const log = new EventLog();
    const a = log.forSession();
    const b = log.forSession();
    const id = await a.storeEvent('_GET_stream', note(1));
    await a.storeEvent('_GET_stream', note(2));
    expect(await b.getStreamIdForEventId!(id)).toBeUndefined();
    await expect(replay(b, id)).rejects.toThrow(/Unknown or expired/);
  });

  it('forgets the oldest events beyond the count and byte bounds, and after the time limit', async () => {
    let now = 0;
    const log = new EventLog({ maxEvents: 3, maxBytes: 5_000, ttlMs: 1000 }, () => now);
    const a = log.forSession();
    const ids = [];
    for (let n = 1; n <= 5; n++) ids.push(await a.storeEvent('s', note(n)));
    expect(log.size.events).toBe(3);
    expect(await a.getStreamIdForEventId!(ids[1])).toBeUndefined();
    expect(await replay(a, ids[2])).toEqual([4, 5]);

    const big = await a.storeEvent('s', note(6, 'x'.repeat(4_800)));
    expect(log.size.bytes).toBeLessThanOrEqual(5_000);
    expect(log.size.events).toBeLessThan(3);
    expect(await a.getStreamIdForEventId!(ids[2])).toBeUndefined(); // the oldest went first
    expect(await a.getStreamIdForEventId!(big)).toBe('s');

    now += 1001;
    expect(await a.getStreamIdForEventId!(big)).toBeUndefined();
    expect(log.size.events).toBe(0);
  });

  it("dispose drops a closed session's events", async () => {
    const log = new EventLog();
    const a = log.forSession();
    const b = log.forSession();
    await a.storeEvent('s', note(1));
    const kept = await b.storeEvent('s', note(2));
    a.dispose();
    expect(log.size.events).toBe(1);
    expect(await b.getStreamIdForEventId!(kept)).toBe('s');
  });
});
