import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, spawnAgent } from '../helpers.js';
import { sharedStores } from '../stores.js';

// Several server processes on one store: the promise is that they behave like one.
type Spawned = Awaited<ReturnType<typeof spawnAgent>>;

describe.each(sharedStores())('many processes on one store ($name)', (store) => {
  // Four processes on one fresh store serve every test of a backend; each test works on keys of its own.
  let running: Spawned[] = [];
  beforeAll(async () => {
    const url = store.fresh();
    running = await Promise.all(Array.from({ length: 4 }, (_, i) => spawnAgent(['--store', url, '--agent', `p${i}`])));
  });
  afterAll(async () => {
    await Promise.all(running.map((a) => a.close()));
  });
  const processes = async (n: number): Promise<Spawned[]> => running.slice(0, n);

  it('N processes x M concurrent increments end exactly at N x M', async () => {
    const N = 4;
    const M = 50;
    const agents = await processes(N);
    await Promise.all(
      agents.flatMap((a) => Array.from({ length: M }, () => a.ok('state_update', { key: 'counter', op: 'increment', value: 1 }))),
    );
    for (const a of agents) expect(await a.ok('state_get', { key: 'counter' })).toMatchObject({ value: N * M, version: N * M });
  });

  it('racing ifVersion:0 creators in different processes produce exactly one winner', async () => {
    const agents = await processes(4);
    for (let round = 0; round < 5; round++) {
      const results = await Promise.all(
        agents.flatMap((a, i) => [0, 1].map((j) => a.raw('state_set', { key: `leader-${round}`, value: `${i}.${j}`, ifVersion: 0 }))),
      );
      const winners = results.filter((r) => !r.isError);
      expect(winners).toHaveLength(1);
      for (const loser of results.filter((r) => r.isError)) {
        expect(JSON.parse((loser.content[0] as { text: string }).text).error.code).toBe('VERSION_CONFLICT');
      }
    }
  });

  it('processes taking turns to rewrite and grow one list of over 128 KB each build on the last write', async () => {
    const agents = await processes(3);
    const item = (tag: string): string => tag.padEnd(300, '.');
    const seed = Array.from({ length: 480 }, (_, i) => item(`seed ${i}`)); // about 146 KB as JSON
    const read = async (agent: Spawned): Promise<string[]> => (await agent.ok('state_get', { key: 'log', maxBytes: 1024 * 1024 })).value;
    let expected: string[] = [];
    for (let round = 0; round < 6; round++) {
      const [setter, appender, reader] = [agents[round % 3], agents[(round + 1) % 3], agents[(round + 2) % 3]];
      // The same size every round: only the first item's text differs.
      const list = [item(`round ${round}`), ...seed.slice(1)];
      await setter.ok('state_set', { key: 'log', value: list });
      await appender.ok('state_update', { key: 'log', op: 'append', value: item(`appended ${round}`) });
      expected = [...list, item(`appended ${round}`)];
      expect(await read(reader)).toEqual(expected);
    }
    // All three at once: every append lands, after everything before.
    const more = agents.flatMap((_, i) => Array.from({ length: 5 }, (_, j) => item(`p${i}-${j}`)));
    await Promise.all(more.map((value, n) => agents[Math.floor(n / 5)].ok('state_update', { key: 'log', op: 'append', value })));
    for (const agent of agents) {
      const final = await read(agent);
      expect(final.slice(0, expected.length)).toEqual(expected);
      expect(final.slice(expected.length).sort()).toEqual([...more].sort());
    }
  });

  it('a watch in one process wakes on a write made by another', async () => {
    const [watcher, writer] = await processes(2);
    const started = Date.now();
    const waiting = watcher.ok('watch', { key: 'signal', waitMs: 20_000 });
    await sleep(300);
    await writer.ok('state_set', { key: 'signal', value: 'go' });
    const result = await waiting;
    expect(result).toMatchObject({ found: true, value: 'go', timedOut: false });
    expect(Date.now() - started).toBeLessThan(10_000);
    // and with afterVersion, for the next change
    const next = watcher.ok('watch', { key: 'signal', afterVersion: 1, waitMs: 20_000 });
    await sleep(200);
    await writer.ok('state_update', { key: 'signal', op: 'append', value: '!' });
    expect(await next).toMatchObject({ value: 'go!', version: 2, timedOut: false });
  });
});
