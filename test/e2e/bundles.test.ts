import { spawnSync } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { CLI, runCli, spawnAgent } from '../helpers.js';

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

  it('import never silently replaces what the store holds: refused with nothing changed, --replace replaces, a version never repeats', async () => {
    const [a, b] = [join(tempDir(), 'a.db'), join(tempDir(), 'b.db')];
    for (const [db, value] of [
      [a, 'from a'],
      [b, 'from b'],
    ]) {
      const w = await spawnAgent(['--store', `sqlite://${db}`, '--thread', 'T', '--agent', 'w']);
      await w.ok('state_set', { key: 'doc', value });
      await w.ok('state_set', { key: 'mine', value, scope: 'thread' });
      if (db === b) await w.ok('state_set', { key: 'only-b', value, scope: 'thread' });
      await w.close();
    }
    const exportOf = async (db: string, ...more: string[]) => (await runCli(['export', '--store', `sqlite://${db}`, ...more])).stdout;
    const file = (name: string, text: string) => {
      const path = join(tempDir(), name);
      writeFileSync(path, text);
      return path;
    };
    const whole = file('a.json', await exportOf(a));
    const thread = file('t.json', await exportOf(a, '--thread', 'T'));
    const before = await exportOf(b);
    for (const bundle of [whole, thread]) {
      const r = await runCli(['import', bundle, '--store', `sqlite://${b}`]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/already holds state .*would replace \d+ record.*Nothing was changed.*--replace/);
      expect(await exportOf(b)).toBe(before);
    }
    // its own bundle again: nothing to replace, nothing changes
    const own = await runCli(['import', file('b.json', before), '--store', `sqlite://${b}`]);
    expect(own.code, own.stderr).toBe(0);
    expect(await exportOf(b)).toBe(before);

    const replaced = await runCli(['import', whole, '--store', `sqlite://${b}`, '--replace']);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(replaced.stderr).toMatch(/replacing \d+ and removing 0 the store held/);
    const r = await spawnAgent(['--store', `sqlite://${b}`, '--thread', 'T', '--agent', 'w']);
    try {
      // b's doc was version 1 with another value: a.json's version 1 goes above it, so a stale ifVersion:1 cannot match
      expect(await r.ok('state_get', { key: 'doc' })).toMatchObject({ value: 'from a', version: 2 });
      expect((await r.err('state_set', { key: 'doc', value: 'stale', ifVersion: 1 })).code).toBe('VERSION_CONFLICT');
    } finally {
      await r.close();
    }
    // a thread bundle with --replace makes the thread what the bundle holds
    const t = await runCli(['import', thread, '--store', `sqlite://${b}`, '--replace']);
    expect(t.code, t.stderr).toBe(0);
    expect(t.stderr).toMatch(/into thread T, replacing \d+ and removing [1-9]\d* the store held/);
    expect(Object.keys(JSON.parse(await exportOf(b, '--thread', 'T')).records)).not.toContain('thread:T\u001fonly-b');
  });

  it('export refuses a thread the store has no record of, and an output it cannot write whole; import refuses records no tool could read', async () => {
    const db = join(tempDir(), 'x.db');
    await seed(db);
    const missing = await runCli(['export', '--store', `sqlite://${db}`, '--namespace', 'team', '--thread', 'nosuch']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/Thread "nosuch" has no state in this store \(namespace team\)/);

    const full = openSync('/dev/full', 'w');
    try {
      const r = spawnSync(process.execPath, [CLI, 'export', '--store', `sqlite://${db}`, '--namespace', 'team'], {
        stdio: ['ignore', full, 'pipe'],
        encoding: 'utf8',
      });
      expect(r.status).toBe(1);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/could not be written whole \(0 of \d+ bytes\)/);
    } finally {
      closeSync(full);
    }

    const before = (await runCli(['export', '--store', `sqlite://${db}`, '--namespace', 'team'])).stdout;
    const record = (rel: string, r: Record<string, unknown>) => JSON.stringify({ format: 2, kind: 'namespace', records: { [rel]: r } });
    for (const [name, text] of [
      ['time out of range', record('global\u001fk', { v: 1, ver: 1, at: 1e300, by: 'x' })],
      ['empty key', record('global\u001f', { v: 1, ver: 1, at: 1, by: 'x' })],
      ['long key', record(`global\u001f${'k'.repeat(513)}`, { v: 1, ver: 1, at: 1, by: 'x' })],
      ['deep value', record('global\u001fk', { v: JSON.parse(`${'['.repeat(2000)}${']'.repeat(2000)}`), ver: 1, at: 1, by: 'x' })],
      ['scope no tool can name', record('nosuch:x\u001fk', { v: 1, ver: 1, at: 1, by: 'x' })],
      ['control character in a key', record('global\u001fa\u001fb', { v: 1, ver: 1, at: 1, by: 'x' })],
      ['lone surrogate in a key', record('global\u001fk\ud800', { v: 1, ver: 1, at: 1, by: 'x' })],
      ['unknown family', record('~nosuch:x\u001fk', { v: 1, ver: 1, at: 1, by: 'x' })],
      [
        'a history event key that is no number',
        record('~history:T\u001fe:zzz', { v: { kind: 'note', content: 'hi' }, ver: 1, at: 1, by: 'x' }),
      ],
      ['a thread bundle without a run', JSON.stringify({ format: 2, kind: 'thread', thread: 'T', run: '', records: {} })],
      ['a run id no server gives', JSON.stringify({ format: 2, kind: 'thread', thread: 'T', run: 'a/../b c', records: {} })],
      ['a format-1 thread id no tool accepts', JSON.stringify({ format: 1, thread: 'a b', run: 'r', records: {} })],
      ['malformed plan record', record('~plan:id\u001fp1', { v: { steps: 'none' }, ver: 1, at: 1, by: 'x' })],
    ]) {
      const r = await runCli(['import', '-', '--store', `sqlite://${db}`, '--namespace', 'team'], text);
      expect(r.code, name).toBe(1);
      expect(r.stderr, name).toMatch(/^mcp-blackboard.*The bundle cannot be used: .*Nothing was changed\.\n$/);
    }
    // a byte-order mark before the JSON is not content
    const bom = await runCli(['import', '-', '--store', `sqlite://${db}`, '--namespace', 'team'], `\ufeff${before}`);
    expect(bom.code, bom.stderr).toBe(0);
    expect((await runCli(['export', '--store', `sqlite://${db}`, '--namespace', 'team'])).stdout).toBe(before);
  });

  it('import - reads a bundle larger than a pipe holds from stdin (a synchronous read of a pipe fails while the writer is still writing)', async () => {
    const db = join(tempDir(), 'x.db');
    const value = 'x'.repeat(900 * 1024);
    const bundle = JSON.stringify({ format: 2, kind: 'namespace', records: { 'global\u001fbig': { v: value, ver: 1, at: 1, by: 'x' } } });
    const piped = spawnSync(
      'bash',
      [
        '-c',
        `"${process.execPath}" -e 'process.stdout.write(require("fs").readFileSync(0))' | "${process.execPath}" "${CLI}" import - --store "sqlite://${db}"`,
      ],
      {
        input: bundle,
        encoding: 'utf8',
      },
    );
    expect(piped.status, piped.stderr).toBe(0);
    const exported = await runCli(['export', '--store', `sqlite://${db}`]);
    expect(JSON.parse(exported.stdout).records['global\u001fbig'].v).toBe(value);
  });
  it("import holds values to --max-value-bytes, the servers' limit (1 MiB by default): a larger one is refused with its record", async () => {
    const db = join(tempDir(), 'x.db');
    await seed(db);
    const exportOf = async () => (await runCli(['export', '--store', `sqlite://${db}`, '--namespace', 'team'])).stdout;
    const before = await exportOf();
    const bundle = (v: unknown) =>
      JSON.stringify({ format: 2, kind: 'namespace', records: { 'global\u001fbig': { v, ver: 1, at: 1, by: 'x' } } });
    const big = bundle('x'.repeat(1536 * 1024));
    const refused = await runCli(['import', '-', '--store', `sqlite://${db}`, '--namespace', 'team'], big);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /record ".*big" holds a value of 1572866 bytes, over this store's limit of 1048576 \(--max-value-bytes\): nothing was changed/,
    );
    const deep = await runCli(
      ['import', '-', '--store', `sqlite://${db}`, '--namespace', 'team'],
      bundle(JSON.parse(`${'['.repeat(100)}${']'.repeat(100)}`)),
    );
    expect(deep.code).toBe(1);
    expect(deep.stderr).toMatch(/record ".*big" cannot be imported: The value nests deeper than 64 levels/);
    expect(await exportOf()).toBe(before);
    // given the limit of servers that accept such values, it is imported
    const taken = await runCli(['import', '-', '--store', `sqlite://${db}`, '--namespace', 'team', '--max-value-bytes', '2097152'], big);
    expect(taken.code, taken.stderr).toBe(0);
    expect(JSON.parse(await exportOf()).records['global\u001fbig'].v).toHaveLength(1536 * 1024);
  });
});
