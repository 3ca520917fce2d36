import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep, spawnAgent, type Spawned } from '../helpers.js';

// SQLite server processes sharing one file over a long working day: they keep answering, and the files stay bounded.
let running: Spawned[] = [];
let dirs: string[] = [];
afterEach(async () => {
  await Promise.all(running.map((a) => a.close()));
  running = [];
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});
async function server(db: string, agent: string): Promise<Spawned> {
  const spawned = await spawnAgent(['--store', `sqlite://${db}`, '--agent', agent, '--thread', `t-${agent}`]);
  running.push(spawned);
  return spawned;
}
function database(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bb-sustained-'));
  dirs.push(dir);
  return join(dir, 'x.db');
}

describe('SQLite under sustained multi-process use', () => {
  it('a process waiting on the board takes in a commit of more than 1000 changes (a large restore) and keeps answering', async () => {
    const db = database();
    const [watcher, writer] = [await server(db, 'watcher'), await server(db, 'writer')];
    const N = 1100;
    const batches = async (value: number): Promise<void> => {
      for (let i = 0; i < N; i += 100) {
        const ops = Array.from({ length: 100 }, (_, j) => ({ op: 'set', key: `k${i + j}`, value, scope: 'thread' }));
        await writer.ok('state_batch', { ops });
      }
    };
    await batches(1);
    const { checkpointId } = await writer.ok('checkpoint_save', {});
    await batches(2);
    const { version } = await watcher.ok('state_get', { key: `k${N - 1}`, scope: 'thread:t-writer' });
    // The watcher waits on the last key of the thread; the restore brings all N keys back in one commit.
    const woken = watcher.ok('watch', { key: `k${N - 1}`, scope: 'thread:t-writer', afterVersion: version, waitMs: 20_000 });
    await sleep(300);
    expect(await writer.ok('checkpoint_restore', { checkpointId })).toMatchObject({ records: N });
    const started = Date.now();
    // Before: the commit listener re-read the same 1000 rows forever, and the process answered nothing more.
    expect(await Promise.race([woken, sleep(10_000).then(() => 'no answer in 10 s')])).toMatchObject({
      found: true,
      value: 1,
      timedOut: false,
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await watcher.ok('state_get', { key: 'k0', scope: 'thread:t-writer' })).toMatchObject({ value: 1 });
  });
});
