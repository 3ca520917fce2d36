// The sign of life written after a call never holds the reply for long when the store is slow to answer (a broken
// link to Postgres or Redis can take a call's whole time), and only one renewal per holder is under way at a time.
import { describe, expect, it } from 'vitest';
import { signsOfLifeKept } from '../../src/services/presence.js';
import type { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, sleep } from '../helpers.js';

const connect = agentsClosedAfterEach();

/** Makes every transaction of `store` wait `ms` first (as one on a connection lost in a partition does); returns a counter. */
function slowTransactions(store: VersionedStore, ms: number): { started: number; restore(): void } {
  const original = store.transact.bind(store);
  const counter = {
    started: 0,
    restore: () => {
      store.transact = original;
    },
  };
  store.transact = (async (...args: Parameters<typeof original>) => {
    counter.started++;
    await sleep(ms);
    return original(...args);
  }) as typeof original;
  return counter;
}

describe('sign of life after a call', () => {
  it('a renewal the store holds up does not hold the reply, and no second one starts meanwhile', async () => {
    // a 1 s lease renews at most every 250 ms
    const a = await connect({ config: { claimLeaseSeconds: 1 } });
    await a.ok('state_set', { key: 'k', value: 1 });
    await sleep(300);
    const slow = slowTransactions(a.store, 3000);
    try {
      let started = Date.now();
      expect((await a.ok('state_get', { key: 'k' })).value).toBe(1);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(slow.started).toBe(1); // the renewal is under way
      started = Date.now();
      await a.ok('state_get', { key: 'k' });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(slow.started).toBe(1); // and not started twice
    } finally {
      slow.restore();
    }
    await sleep(3200); // the held-up renewal finishes before the store closes
  }, 15_000);

  it('a long-lived process keeps only the holders it wrote within the renewal interval, however many threads it has served', async () => {
    // a 1 s lease renews at most every 250 ms: a holder written longer ago than that is written again on its next call
    const a = await connect({ config: { claimLeaseSeconds: 1 } });
    let thread = 0;
    for (let batch = 0; batch < 3; batch++) {
      if (batch > 0) await sleep(300);
      for (let i = 0; i < 50; i++) {
        const served = await a.client.callTool({ name: 'whoami', arguments: {}, _meta: { 'blackboard/thread': `served-${thread++}` } });
        expect(served.isError).toBeFalsy();
      }
    }
    // 150 holders served; those of the first two batches were written over an interval ago, and are forgotten
    expect(signsOfLifeKept(a.store)).toBeGreaterThan(0);
    expect(signsOfLifeKept(a.store)).toBeLessThanOrEqual(51);
  }, 30_000);
});
