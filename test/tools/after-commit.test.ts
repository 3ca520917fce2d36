// A store that fails after a call has committed its change: the reply never says that nothing was changed.
import { describe, expect, it } from 'vitest';
import type { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

const agent = agentsClosedAfterEach();

/**
 * Once the next transaction commits, reads outside a transaction (`get` and `list`, or only `list`) fail as a broken
 * link would; a transaction's own reads still work. Returns what heals it.
 */
function breakReadsAfterCommit(store: VersionedStore, which: Array<'get' | 'list'> = ['get', 'list']): () => void {
  const { get, list, transact } = store;
  let broken = false;
  const reset = async (): Promise<never> => {
    throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  };
  store.transact = async (...args: Parameters<typeof transact>) => {
    const committed = await transact.apply(store, args);
    broken = true;
    return committed;
  };
  if (which.includes('get')) store.get = (...args) => (broken ? reset() : get.apply(store, args));
  if (which.includes('list')) store.list = (...args) => (broken ? reset() : list.apply(store, args));
  return () => {
    Object.assign(store, { get, list, transact });
  };
}

describe('a read that fails after the call committed', () => {
  it('run_start and checkpoint_restore answer their success: the reads after the commit are not the call', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { agent: 'a', thread: 't' } });
    await a.ok('state_set', { key: 'x', scope: 'thread', value: 'before' });
    const { checkpointId } = await a.ok('checkpoint_save', {});
    await a.ok('state_set', { key: 'x', scope: 'thread', value: 'after' });
    const { run } = await a.ok('whoami');

    let heal = breakReadsAfterCommit(store);
    const restored = await a.ok('checkpoint_restore', { checkpointId });
    heal();
    expect(restored).toMatchObject({ checkpointId, thread: 't' });
    expect((await a.ok('state_get', { key: 'x', scope: 'thread' })).value).toBe('before');

    heal = breakReadsAfterCommit(store);
    const started = await a.ok('run_start', {});
    heal();
    expect(started.run).not.toBe(run);
    expect((await a.ok('whoami')).run).toBe(started.run);
  });

  it('inbox with ack: the ack is kept, and the failure to read after it says so', async () => {
    const store = memoryStore();
    const lead = await agent({ store, config: { agent: 'lead', thread: 'tl' } });
    const w = await agent({ store, config: { agent: 'w', thread: 'tw' } });
    await w.ok('whoami');
    for (const n of [1, 2]) await lead.ok('message_send', { to: 'w', content: `n${n}` });
    const first = await w.ok('inbox', { limit: 1 });

    const heal = breakReadsAfterCommit(store, ['list']); // the ack's own reads work; reading the mail after it fails
    const failed = await w.err('inbox', { ack: first.cursor });
    heal();
    expect(failed.code).toBe('STORE_UNAVAILABLE');
    expect(failed.details).toMatchObject({ outcome: 'applied' });
    expect(failed.message).not.toMatch(/nothing was changed/i);
    expect(failed.message).toMatch(/already applied its change \(the acknowledged position moved to \d+\)/);
    // the ack did move the position
    expect((await w.ok('inbox', {})).messages.map((m: { content: string }) => m.content)).toEqual(['n2']);
  });
});
