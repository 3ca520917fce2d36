import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { runCli, spawnAgent } from '../helpers.js';

type Spawned = Awaited<ReturnType<typeof spawnAgent>>;
let running: Spawned[] = [];
afterEach(async () => {
  await Promise.all(running.map((a) => a.close()));
  running = [];
});
async function start(args: string[], env?: Record<string, string>, cwd?: string): Promise<Spawned> {
  const a = await spawnAgent(args, env, cwd);
  running.push(a);
  return a;
}

describe('the built bin over stdio', () => {
  it('serves the kv tools on a SQLite file and logs only to stderr', async () => {
    const db = join(tempDir(), 'e2e.db');
    const a = await start(['--store', `sqlite://${db}`, '--agent', 'e2e']);
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['state_get', 'state_set', 'watch']));
    await a.ok('state_set', { key: 'hello', value: { from: 'stdio' } });
    expect(await a.ok('state_get', { key: 'hello' })).toMatchObject({ found: true, value: { from: 'stdio' }, updatedBy: 'e2e' });
    await a.close();
    // the banner names the absolute store path and the tool count
    expect(a.stderr()).toContain(`store=sqlite://${db}`);
    expect(a.stderr()).toMatch(new RegExp(`${tools.length} tools`));
    // and the data is on disk for the next process
    const b = await start(['--store', `sqlite://${db}`]);
    expect((await b.ok('state_get', { key: 'hello' })).value).toEqual({ from: 'stdio' });
  });

  it('reads its configuration from the environment too', async () => {
    const db = join(tempDir(), 'env.db');
    const a = await start([], { BLACKBOARD_STORE: `sqlite://${db}`, BLACKBOARD_NAMESPACE: 'envns', BLACKBOARD_AGENT: 'from-env' });
    const { tools } = await a.client.listTools();
    expect(tools.every((t) => t.name.startsWith('envns_'))).toBe(true);
    await a.ok('state_set', { key: 'k', value: 1 });
    expect((await a.ok('state_get', { key: 'k' })).updatedBy).toBe('from-env');
  });

  it('resolves a relative sqlite:// path against the working directory', async () => {
    const dir = tempDir();
    const a = await start(['--store', 'sqlite://relative.db'], {}, dir);
    await a.close();
    expect(a.stderr()).toContain(`store=sqlite://${join(dir, 'relative.db')}`);
    expect(existsSync(join(dir, 'relative.db'))).toBe(true);
  });

  it('--help lists every flag, --version prints the version, bad flags fail with a reason', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    for (const flag of ['--http', '--token', '--store', '--namespace', '--agent', '--agent-type', '--thread', '--parent-thread', '--tools', '--max-iterations', '--budget', '--allow-budget-admin', '--max-value-bytes', '--plan-ttl', '--keep-checkpoints', '--version']) {
      expect(help.stdout).toContain(flag);
    }
    const version = await runCli(['--version']);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const bad = await runCli(['--namespace', 'Bad-NS']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/namespace/);
    expect(bad.stdout).toBe('');
    // An unreachable Redis: one line naming the URL with the password masked, exit 1.
    const redis = await runCli(['--store', 'redis://:s3cret@127.0.0.1:1/0']);
    expect(redis.code).toBe(1);
    expect(redis.stderr.trim().split('\n')).toHaveLength(1);
    expect(redis.stderr).toMatch(/cannot open the store redis:\/\/:\*\*\*@127\.0\.0\.1:1\/0: .*ECONNREFUSED/);
    expect(redis.stderr).not.toContain('s3cret');
  });
});
