// postgres:// with a password (SCRAM, as every managed Postgres asks): a password full of URL syntax, percent-encoded
// in the URL, authenticates; a wrong one is one line and exit 1; neither ever shows the password.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnAgent } from '../helpers.js';
import { startPostgres, withFreshSchema, type PostgresHandle } from '../services/postgres.js';

const PASSWORD = 'p@ss:w%rd/?#';
let server: PostgresHandle | undefined;
let skipped: string | undefined;

beforeAll(async () => {
  const started = await startPostgres({ maxConnections: 30 });
  if ('skipped' in started) {
    skipped = started.skipped;
    return;
  }
  server = started;
  // a role that must give its password (scram-sha-256); every other connection keeps trust
  const admin = new pg.Client({ connectionString: started.url });
  await admin.connect();
  await admin.query(`CREATE ROLE bbuser LOGIN PASSWORD ${pg.escapeLiteral(PASSWORD)}`);
  await admin.query('GRANT CREATE ON DATABASE postgres TO bbuser');
  const hba = (await admin.query<{ hba_file: string }>('SHOW hba_file')).rows[0].hba_file;
  await admin.query(
    `COPY (VALUES ('host all bbuser 127.0.0.1/32 scram-sha-256'), ('host all all 127.0.0.1/32 trust'), ('local all all trust')) TO ${pg.escapeLiteral(hba)}`,
  );
  await admin.query('SELECT pg_reload_conf()');
  await admin.end();
}, 60_000);
afterAll(async () => {
  await server?.destroy();
});

const urlWith = (password: string): string =>
  withFreshSchema(`postgres://bbuser:${encodeURIComponent(password)}@127.0.0.1:${server!.port}/postgres`);

describe('postgres:// with a password', () => {
  it('authenticates with a percent-encoded password full of URL syntax, and never prints it', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const agent = await spawnAgent(['--store', urlWith(PASSWORD), '--agent', 'a']);
    try {
      await agent.ok('state_set', { key: 'k', value: 1 });
      expect(await agent.ok('state_get', { key: 'k' })).toMatchObject({ found: true, value: 1 });
    } finally {
      await agent.close();
    }
    expect(agent.stderr()).toMatch(/store=postgres:\/\/bbuser:\*\*\*@127\.0\.0\.1:\d+\/postgres\?schema=/);
    for (const shown of [PASSWORD, encodeURIComponent(PASSWORD)]) expect(agent.stderr()).not.toContain(shown);
  });

  it('a role with only read and write on a board made by another runs it: every tool family, no error', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = urlWith(PASSWORD);
    const schema = new URL(url).searchParams.get('schema')!;
    // the board made once by its owner (bbuser, who may create), then handed to a role that may only read and write
    const owner = await spawnAgent(['--store', url, '--agent', 'owner']);
    await owner.ok('state_set', { key: 'made', value: true });
    await owner.close();
    const admin = new pg.Client({ connectionString: server!.url });
    await admin.connect();
    await admin.query(`CREATE ROLE bbapp LOGIN PASSWORD 'app-pw'`);
    await admin.query(`GRANT USAGE ON SCHEMA "${schema}" TO bbapp`);
    await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "${schema}" TO bbapp`);
    await admin.end();
    const appUrl = url.replace(/^postgres:\/\/bbuser:[^@]+@/, 'postgres://bbapp:app-pw@');
    const [a, b] = [await spawnAgent(['--store', appUrl, '--agent', 'a']), await spawnAgent(['--store', appUrl, '--agent', 'b'])];
    try {
      expect(await a.ok('state_get', { key: 'made' })).toMatchObject({ found: true, value: true });
      await a.ok('state_set', { key: 'k', value: 1 });
      const { planId } = await a.ok('plan_create', { title: 'least privilege', steps: ['one'] });
      expect(await b.ok('plan_claim', { planId })).toMatchObject({ claimed: true });
      const { version } = await a.ok('state_set', { key: 'w', value: 0 });
      const woke = b.ok('watch', { key: 'w', afterVersion: version, waitMs: 10_000 });
      setTimeout(() => void a.ok('state_set', { key: 'w', value: 1 }), 100);
      expect(await woke).toMatchObject({ found: true, value: 1 });
      const { checkpointId } = await a.ok('checkpoint_save', {});
      await a.ok('checkpoint_restore', { checkpointId });
      await a.ok('message_send', { to: 'b', content: 'hi' });
      expect((await b.ok('inbox', { waitMs: 5000 })).messages).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
    expect(a.stderr()).not.toMatch(/error|denied/i);
  }, 60_000);

  it('a role that owns a schema made for it, but may not create schemas, makes its board there', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const admin = new pg.Client({ connectionString: server!.url });
    await admin.connect();
    await admin.query(`CREATE ROLE bbown LOGIN PASSWORD 'own-pw'`);
    await admin.query('CREATE SCHEMA made_for_bbown AUTHORIZATION bbown');
    await admin.end();
    const agent = await spawnAgent(['--store', `postgres://bbown:own-pw@127.0.0.1:${server!.port}/postgres?schema=made_for_bbown`]);
    try {
      await agent.ok('state_set', { key: 'k', value: 1 });
      expect(await agent.ok('state_get', { key: 'k' })).toMatchObject({ found: true, value: 1 });
    } finally {
      await agent.close();
    }
  });

  it('refuses a wrong password at start-up with one line, naming the cause, not the password', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const wrong = `${PASSWORD}x`;
    const result = await runCli(['--store', urlWith(wrong)]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/cannot open the store postgres:\/\/bbuser:\*\*\*@.*password authentication failed for user "bbuser"/);
    for (const shown of [wrong, encodeURIComponent(wrong), PASSWORD]) expect(result.stderr).not.toContain(shown);
  });
});
