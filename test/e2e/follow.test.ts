import { afterEach, describe, expect, it } from 'vitest';
import { sleep, spawnAgent, type Spawned } from '../helpers.js';
import { sharedStores } from '../stores.js';

// Following the board from another process: state_changes misses nothing and repeats nothing.
let running: Spawned[] = [];
afterEach(async () => {
  await Promise.all(running.map((a) => a.close()));
  running = [];
});
async function start(url: string, agent: string): Promise<Spawned> {
  const a = await spawnAgent(['--store', url, '--agent', agent]);
  running.push(a);
  return a;
}

type Change = { scope: string; key: string; version: number; revision: number; deleted: boolean };
const SCOPES = ['global', 'group:team'];

describe.each(sharedStores())('following the board across processes ($name)', (store) => {
  it('a follower of chained state_changes sees every write once, in order, and replaying them gives the final state', async () => {
    const url = store.fresh();
    const [writer, follower] = await Promise.all([start(url, 'writer'), start(url, 'follower')]);
    const { revision: start_ } = await follower.ok('state_changes', {});
    const seen: Change[] = [];
    let stop = false;
    const following = (async () => {
      let after = start_;
      while (!stop || after < (await follower.ok('state_changes', {})).revision) {
        const page = await follower.ok('state_changes', { afterRevision: after, waitMs: 200, limit: 50 });
        for (const c of page.changes) seen.push(c);
        expect(page.revision).toBeGreaterThanOrEqual(after);
        after = page.revision;
      }
    })();
    const ops = 2000;
    let i = 0;
    let written = 0; // the writes the server acknowledged as made (a delete of an absent key writes nothing)
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (i < ops) {
          const n = i++;
          const scope = SCOPES[n % 2];
          const key = `k${n % 37}`;
          switch (n % 5) {
            case 0:
            case 1:
              await writer.ok('state_set', { key, scope, value: n });
              written++;
              break;
            case 2:
              await writer.ok('state_update', { key: `c${n % 7}`, scope, op: 'increment', value: 1 });
              written++;
              break;
            case 3:
              if ((await writer.ok('state_delete', { key, scope })).deleted) written++;
              break;
            case 4: {
              const { results } = await writer.ok('state_batch', {
                ops: [
                  { op: 'set', key, scope, value: n },
                  { op: 'delete', key: `k${(n + 1) % 37}`, scope },
                ],
              });
              written += 1 + (results[1].deleted ? 1 : 0);
              break;
            }
          }
        }
      }),
    );
    stop = true;
    await following;

    // nothing repeated; revisions never go back; within a revision each key once
    const ids = seen.map((c) => `${c.revision}/${c.scope}/${c.key}`);
    expect(new Set(ids).size).toBe(ids.length);
    for (let j = 1; j < seen.length; j++) expect(seen[j].revision).toBeGreaterThanOrEqual(seen[j - 1].revision);
    // a key's versions only grow
    const last = new Map<string, Change>();
    for (const c of seen) {
      const id = `${c.scope}/${c.key}`;
      const before = last.get(id);
      if (before) expect(c.version, id).toBeGreaterThanOrEqual(before.version);
      last.set(id, c);
    }
    // replaying the feed gives the final state, scope by scope
    const thread = (await writer.ok('whoami')).thread;
    for (const scope of SCOPES) {
      const label = scope;
      const listed = await writer.ok('state_list', { scope, limit: 1000 });
      const live = Object.fromEntries(listed.keys.map((k: { key: string; version: number }) => [k.key, k.version]));
      const replayed = Object.fromEntries([...last.values()].filter((c) => c.scope === label && !c.deleted).map((c) => [c.key, c.version]));
      expect(replayed, `scope ${scope} (writer thread ${thread})`).toEqual(live);
    }
    // and nothing missed: one change per acknowledged write
    expect(seen.length).toBe(written);
  });

  it('a waiting follower returns soon after a write in another process', async () => {
    const url = store.fresh();
    const [writer, follower] = await Promise.all([start(url, 'writer'), start(url, 'follower')]);
    const delays: number[] = [];
    let { revision } = await follower.ok('state_changes', {});
    for (let round = 0; round < 8; round++) {
      const waiting = follower.ok('state_changes', { afterRevision: revision, waitMs: 10_000 }).then((r) => ({ r, at: performance.now() }));
      await sleep(20 + Math.random() * 30);
      await writer.ok('state_set', { key: 'tick', value: round });
      const wrote = performance.now();
      const { r, at } = await waiting;
      expect(r.changes).toMatchObject([{ key: 'tick', version: round + 1 }]);
      delays.push(at - wrote);
      revision = r.revision;
    }
    delays.sort((a, b) => a - b);
    const median = delays[delays.length >> 1];
    console.error(`[${store.name}] state_changes waitMs wake-up after another process's write: median ${median.toFixed(1)} ms`);
    // a generous bound for a loaded CI machine; the benchmark measures it properly
    expect(median).toBeLessThan(500);
  });
});
