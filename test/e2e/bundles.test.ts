import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { runCli, spawnAgent } from '../helpers.js';

async function seed(db: string): Promise<void> {
  const a = await spawnAgent([
    '--store',
    `sqlite://${db}`,
    '--namespace',
    'team',
    '--thread',
    'T',
    '--agent',
    'seed',
    '--max-iterations',
    '5',
  ]);
  try {
    await a.ok('state_set', { key: 'k', value: { nested: ['x', 1, null] }, scope: 'thread' });
    await a.ok('state_set', { key: '__proto__', value: 'odd key', scope: 'thread' });
    await a.ok('state_set', { key: 'r', value: 'run value', scope: 'run' });
    await a.ok('state_set', { key: 'g', value: 'global value' });
    await a.ok('plan_create', { title: 'p', steps: ['one'] });
    await a.ok('scratchpad_write', { kind: 'observation', value: 'seen' });
    await a.ok('budget_step', {});
    await a.ok('history_append', { kind: 'note', content: 'hello' });
    await a.ok('agent_state_set', { state: 'running' });
    await a.ok('checkpoint_save', {});
  } finally {
    await a.close();
  }
}

describe('export and import bundles', () => {
  it('export → import into an empty store round-trips byte for byte (thread and namespace)', async () => {
    const dir = tempDir();
    const source = join(dir, 'source.db');
    await seed(source);
    for (const scope of [['--thread', 'T'], []]) {
      const target = join(tempDir(), 'target.db');
      const exported = await runCli(['export', '--store', `sqlite://${source}`, '--namespace', 'team', ...scope]);
      expect(exported.code, exported.stderr).toBe(0);
      const doc = JSON.parse(exported.stdout);
      expect(doc.format).toBe(2);
      expect(Object.keys(doc.records).length).toBeGreaterThan(5);
      const file = join(dir, `bundle${scope.length}.json`);
      writeFileSync(file, exported.stdout);
      const imported = await runCli(['import', file, '--store', `sqlite://${target}`, '--namespace', 'team']);
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stdout).toBe('');
      const again = await runCli(['export', '--store', `sqlite://${target}`, '--namespace', 'team', ...scope]);
      expect(again.stdout).toBe(exported.stdout);
    }
    // the thread export holds the thread's state but not global keys
    const thread = JSON.parse((await runCli(['export', '--store', `sqlite://${source}`, '--namespace', 'team', '--thread', 'T'])).stdout);
    const keys = Object.keys(thread.records);
    expect(keys).toContain('thread:T\u001fk');
    expect(keys.some((k) => k.startsWith('global'))).toBe(false);
  });

  it('an imported thread is served as it was', async () => {
    const source = join(tempDir(), 's.db');
    const target = join(tempDir(), 't.db');
    await seed(source);
    const file = join(tempDir(), 'thread.json');
    writeFileSync(file, (await runCli(['export', '--store', `sqlite://${source}`, '--namespace', 'team', '--thread', 'T'])).stdout);
    expect((await runCli(['import', file, '--store', `sqlite://${target}`, '--namespace', 'team'])).code).toBe(0);
    const b = await spawnAgent(['--store', `sqlite://${target}`, '--namespace', 'team', '--thread', 'T']);
    try {
      expect(await b.ok('state_get', { key: 'k', scope: 'thread' })).toMatchObject({
        value: { nested: ['x', 1, null] },
        updatedBy: 'seed',
      });
      expect((await b.ok('state_get', { key: 'r', scope: 'run' })).value).toBe('run value');
      expect((await b.ok('scratchpad_read')).observations).toEqual(['seen']);
      expect((await b.ok('agent_state_get')).state).toBe('running');
    } finally {
      await b.close();
    }
  });

  it('a corrupt or truncated bundle is refused with one line on stderr and leaves the store unchanged', async () => {
    const db = join(tempDir(), 'keep.db');
    await seed(db);
    const before = (await runCli(['export', '--store', `sqlite://${db}`, '--namespace', 'team'])).stdout;
    const good = (await runCli(['export', '--store', `sqlite://${db}`, '--namespace', 'team', '--thread', 'T'])).stdout;
    for (const [name, text] of [
      ['truncated', good.slice(0, good.length - 40)],
      ['not json', 'hello'],
      ['bad record', '{"format":2,"kind":"namespace","records":{"global\\u001fk":{"v":1}}}'],
    ]) {
      const file = join(tempDir(), `${name}.json`);
      writeFileSync(file, text);
      const r = await runCli(['import', file, '--store', `sqlite://${db}`, '--namespace', 'team']);
      expect(r.code, name).not.toBe(0);
      expect(r.stderr.trim().split('\n'), name).toHaveLength(1);
      expect(r.stderr).toMatch(/cannot be used|corrupt|not JSON|malformed/i);
      expect(r.stdout).toBe('');
    }
    expect((await runCli(['export', '--store', `sqlite://${db}`, '--namespace', 'team'])).stdout).toBe(before);
  });
});
