// postgres:// over TLS, as managed Postgres services require: server processes on a Postgres whose certificate only
// its CA vouches for. With that CA (sslrootcert) they serve over TLS; without it, one line and exit 1.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnAgent } from '../helpers.js';
import { startPostgres, withFreshSchema, type PostgresHandle } from '../services/postgres.js';

let server: PostgresHandle | undefined;
let skipped: string | undefined;

beforeAll(async () => {
  const started = await startPostgres({ tls: true, maxConnections: 50 });
  if ('skipped' in started) skipped = started.skipped;
  else server = started;
}, 60_000);
afterAll(async () => {
  await server?.destroy();
});

/** Whether each of the servers' connections (application_name mcp-blackboard) is encrypted, as Postgres sees it. */
async function serverConnections(): Promise<Array<{ ssl: boolean }>> {
  const admin = new pg.Client({ connectionString: server!.url });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ ssl: boolean }>(
      `SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'mcp-blackboard'`,
    );
    return rows;
  } finally {
    await admin.end();
  }
}

describe('postgres:// over TLS', () => {
  it('serves a board over TLS with sslmode=verify-full and the CA, its listener too: every connection is encrypted', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = withFreshSchema(`${server!.url}?sslmode=verify-full&sslrootcert=${encodeURIComponent(server!.caFile!)}`);
    const [a, b] = [await spawnAgent(['--store', url, '--agent', 'a']), await spawnAgent(['--store', url, '--agent', 'b'])];
    try {
      await a.ok('state_set', { key: 'k', value: { over: 'tls' } });
      expect(await b.ok('state_get', { key: 'k' })).toMatchObject({ found: true, value: { over: 'tls' } });
      // a watch in one process wakes on a write in the other: the listening connection works over TLS as well
      const { version } = await a.ok('state_set', { key: 'w', value: 0 });
      const woke = b.ok('watch', { key: 'w', afterVersion: version, waitMs: 10_000 });
      setTimeout(() => void a.ok('state_set', { key: 'w', value: 1 }), 100);
      expect(await woke).toMatchObject({ found: true, value: 1 });
      const rows = await serverConnections();
      expect(rows.length).toBeGreaterThanOrEqual(2); // each process's pool and listener
      expect(rows.every((r) => r.ssl)).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('sslmode=no-verify encrypts without checking the certificate', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const a = await spawnAgent(['--store', withFreshSchema(`${server!.url}?sslmode=no-verify`), '--agent', 'nv']);
    try {
      await a.ok('state_set', { key: 'k', value: 1 });
      const rows = await serverConnections();
      expect(rows.length).toBeGreaterThanOrEqual(1);
      expect(rows.every((r) => r.ssl)).toBe(true);
    } finally {
      await a.close();
    }
  });

  it('refuses a certificate it cannot verify at start-up with one line, and nothing on stdout', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const url = withFreshSchema(`${server!.url}?sslmode=require`);
    const result = await runCli(['--store', url]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    // (pg's own eight-line warning about sslmode=require is not printed: the mode it applies is named instead)
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/cannot open the store postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?sslmode=require.*: .*certificate/i);
  });
});
