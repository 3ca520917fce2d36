// A server started while the link to Postgres or Redis is cut keeps trying to open its store and serves once it heals;
// what a retry cannot mend (nothing listening, a bad URL) still ends the start at once.
import { describe, expect, it } from 'vitest';
import { isLinkFailure } from '../../src/cli/reach.js';
import { runCli, type Spawned, sleep, spawnAgent } from '../helpers.js';
import { freshStore, PG, proxyTo, REDIS, spawned } from './link-harness.js';

describe('which start-up failures are tried again', () => {
  it('a link that timed out, was reset or cut, or a database starting up: yes; refused, unknown host, bad password or option: no', () => {
    for (const text of [
      'cannot open the store postgres://x: Connection terminated due to connection timeout',
      'cannot open the store redis://x: Redis did not answer within 5000 ms',
      'read ECONNRESET',
      'Connection terminated unexpectedly',
      'the database system is starting up',
      'the database system is shutting down',
      'LOADING Redis is loading the dataset in memory',
    ])
      expect(isLinkFailure(new Error(text)), text).toBe(true);
    for (const text of [
      'connect ECONNREFUSED 127.0.0.1:1',
      'getaddrinfo ENOTFOUND db.invalid',
      'password authentication failed for user "bob"',
      'database "nope" does not exist',
      'WRONGPASS invalid username-password pair',
      'self-signed certificate',
      // settings that name a timeout are settings all the same
      'unknown Redis URL option "foo" (known: prefix, timeout)',
      'timeout must be milliseconds (100-600000), not "abc"',
      'invalid value for parameter "statement_timeout": "x"',
      // a URL that names a timeout option, with a cause a retry cannot mend
      'cannot open the store postgres://bob:***@db/app?connect_timeout=3: password authentication failed for user "bob"',
      'cannot open the store redis://127.0.0.1:1?timeout=2000: connect ECONNREFUSED 127.0.0.1:1',
    ])
      expect(isLinkFailure(new Error(text)), text).toBe(false);
  });
});

for (const kind of ['postgres', 'redis'] as const) {
  const base = kind === 'postgres' ? PG : REDIS;
  describe(`${kind}: a server starts while the link is cut`, () => {
    it.skipIf(!base)(
      'it says on stderr that it tries again, and serves once the link heals',
      async () => {
        const store = freshStore(kind, base!);
        const proxy = await proxyTo(store);
        void proxy.partition(60_000);
        // the 2025 handshake reaches this process itself (a 2026 client probes on a sibling process first)
        const spawning = spawnAgent(['--store', proxy.via(store), '--agent', 'late'], {}, undefined, 'legacy');
        // Cut from its first connection on for longer than the 5 s connect timeout: its first try fails.
        while (proxy.accepted() === 0) await sleep(50);
        await sleep(6000);
        proxy.heal();
        const agent: Spawned = await spawning;
        spawned.push(agent);
        expect((await agent.ok('state_set', { key: 'k', value: 1 })).version).toBe(1);
        expect(agent.stderr()).toMatch(/cannot open the store .*; trying again \(for \d+ s more\)/);
        expect(agent.stderr()).toMatch(/on stdio: \d+ tools/);
      },
      60_000,
    );
  });
}

describe('a start-up failure a retry cannot mend', () => {
  it('nothing listening at the address ends the start at once, with exit code 1', async () => {
    const started = Date.now();
    const r = await runCli(['--store', 'postgres://bob@127.0.0.1:1/db']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot open the store .*ECONNREFUSED/);
    expect(r.stderr).not.toMatch(/trying again/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
