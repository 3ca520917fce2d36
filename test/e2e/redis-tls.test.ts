// rediss://: a server process on a Redis that only its CA vouches for; without that CA, one line and exit 1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnAgent } from '../helpers.js';
import { startRedis, type RedisHandle } from '../services/redis.js';

let server: RedisHandle | undefined;
let skipped: string | undefined;

beforeAll(async () => {
  const started = await startRedis({ tls: true });
  if ('skipped' in started) skipped = started.skipped;
  else server = started;
});
afterAll(async () => {
  await server?.stop();
});

describe('rediss://', () => {
  it('serves a board over TLS when the certificate is trusted', async ({ skip }) => {
    if (skipped) skip(skipped);
    const agent = await spawnAgent(['--store', `${server!.tlsUrl}?prefix=tls`], { NODE_EXTRA_CA_CERTS: server!.caFile! });
    try {
      await agent.ok('state_set', { key: 'k', value: { over: 'tls' } });
      expect(await agent.ok('state_get', { key: 'k' })).toMatchObject({ found: true, value: { over: 'tls' } });
    } finally {
      await agent.close();
    }
    expect(agent.stderr()).toContain(`store=${server!.tlsUrl}?prefix=tls`);
  });

  it('refuses an untrusted certificate at start-up with one line', async ({ skip }) => {
    if (skipped) skip(skipped);
    const result = await runCli(['--store', `${server!.tlsUrl}?prefix=tls`]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/cannot open the store rediss:\/\/127\.0\.0\.1:\d+\?prefix=tls: .*certificate/i);
  });
});
