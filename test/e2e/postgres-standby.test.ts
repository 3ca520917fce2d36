// postgres:// pointed at a database that cannot take writes: a read-only standby (a replica's endpoint, as managed
// services hand out beside the primary's) or a role whose transactions are read-only stops start-up with one line that
// names it and says where to point instead; a role that may only read stops at its first write, with the store named.
// A primary that turns read-only under a running server refuses writes truthfully (nothing changed), and the same
// server writes again once it is read-write.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, sleep, spawnAgent } from '../helpers.js';
import { startPostgres, withFreshSchema, type PostgresHandle } from '../services/postgres.js';

let primary: PostgresHandle | undefined;
let standby: PostgresHandle | undefined;
let skipped: string | undefined;
let url = '';

/** Runs statements, one by one, as the primary's superuser. */
async function admin(...statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: primary!.url });
  await client.connect();
  try {
    for (const sql of statements) await client.query(sql);
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  const started = await startPostgres({ maxConnections: 30 });
  if ('skipped' in started) {
    skipped = started.skipped;
    return;
  }
  primary = started;
  // a board made on the primary, so that the standby holds it too
  url = withFreshSchema(primary.url);
  const maker = await spawnAgent(['--store', url, '--agent', 'maker']);
  await maker.ok('state_set', { key: 'made', value: true });
  await maker.close();
  const copy = await startPostgres({ maxConnections: 30, standbyOf: primary });
  if ('skipped' in copy) throw new Error(copy.skipped);
  standby = copy;
}, 120_000);
afterAll(async () => {
  await standby?.destroy();
  await primary?.destroy();
});

const onStandby = (): string => url.replace(`:${primary!.port}/`, `:${standby!.port}/`);

describe('postgres:// that cannot take writes', () => {
  it('a read-only standby stops start-up with one line, for serving and for the commands', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const replica = new pg.Client({ connectionString: standby!.url });
    await replica.connect();
    try {
      expect((await replica.query('SELECT pg_is_in_recovery() AS r')).rows[0].r).toBe(true);
      // the board is there: the refusal is about the standby, not a missing board
      const schema = new URL(url).searchParams.get('schema')!;
      const found = await replica.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      expect(found.rowCount).toBe(1);
    } finally {
      await replica.end();
    }
    for (const args of [
      ['--store', onStandby()],
      ['export', '--store', onStandby()],
    ]) {
      const result = await runCli(args);
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^mcp-blackboard( export)?: cannot open the store postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?schema=\S+: /,
      );
      expect(lines[0]).toContain('read-only standby');
      expect(lines[0]).toContain('point --store at the primary');
    }
  });

  it('a role whose transactions are read-only stops start-up with one line', async ({ skip }) => {
    if (skipped) return skip(skipped);
    await admin('CREATE ROLE reader LOGIN', 'ALTER ROLE reader SET default_transaction_read_only = on');
    const result = await runCli(['--store', url.replace('postgres://postgres@', 'postgres://reader@')]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('default_transaction_read_only is on');
  });

  it('a role that may only read the board: serving stops at its first write with one line naming the store', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const schema = new URL(url).searchParams.get('schema')!;
    await admin(
      'CREATE ROLE looker LOGIN',
      `GRANT USAGE ON SCHEMA "${schema}" TO looker`,
      `GRANT SELECT ON ALL TABLES IN SCHEMA "${schema}" TO looker`,
    );
    const result = await runCli(['--store', url.replace('postgres://postgres@', 'postgres://looker@')]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^mcp-blackboard: cannot open the store postgres:\/\/looker@127\.0\.0\.1:\d+\/postgres\?schema=\S+: .*permission denied/,
    );
  });

  it('a primary that turns read-only under a running server: writes refused with nothing changed, then written again', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const agent = await spawnAgent(['--store', url, '--agent', 'a']);
    try {
      await agent.ok('state_set', { key: 'before', value: 1 });
      await admin('ALTER SYSTEM SET default_transaction_read_only = on', 'SELECT pg_reload_conf()');
      await sleep(300); // every backend has taken the reload
      const refused = await agent.err('state_set', { key: 'during', value: 2 });
      expect(refused.code).toBe('STORE_UNAVAILABLE');
      expect(refused.message).toContain('read-only');
      expect(refused.message).toContain('Nothing was changed');
      // reads go on
      expect(await agent.ok('state_get', { key: 'before' })).toMatchObject({ found: true, value: 1 });
      await admin('ALTER SYSTEM RESET default_transaction_read_only', 'SELECT pg_reload_conf()');
      await sleep(300);
      expect(await agent.ok('state_get', { key: 'during' })).toMatchObject({ found: false });
      await agent.ok('state_set', { key: 'after', value: 3 });
      expect(await agent.ok('state_get', { key: 'after' })).toMatchObject({ found: true, value: 3 });
    } finally {
      await agent.close();
    }
    expect(agent.stderr()).not.toMatch(/Error:| {4}at /);
  });
});
