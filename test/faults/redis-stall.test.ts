// Redis stalling (CLIENT PAUSE) under the board: calls time out and their connections are replaced, and no connection
// is left behind, neither across repeated stalls nor after close (a leaked socket keeps the process from exiting).
import { createClient } from '@redis/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisBackend } from '../../src/store/redis/backend.js';
import { sleep } from '../helpers.js';
import { startRedis, type RedisHandle } from '../services/redis.js';

let server: RedisHandle | undefined;
let skipped: string | undefined;
const opened: RedisBackend[] = [];

// A server of its own: a pause stalls every client of the server.
beforeAll(async () => {
  const started = await startRedis();
  if ('skipped' in started) skipped = started.skipped;
  else server = started;
});
afterAll(async () => {
  await Promise.allSettled(opened.map((b) => b.close()));
  await server?.stop();
});

/** Sends one command on a connection of its own, closed after (counted out of CLIENT LIST). */
async function admin(args: string[]): Promise<string> {
  const client = createClient({ url: server!.url, RESP: 2, disableClientInfo: true });
  await client.connect();
  try {
    return String(await client.sendCommand(args));
  } finally {
    client.destroy();
  }
}

/** Stalls every client of the server for `ms` (the pause ends by itself: an UNPAUSE would be paused too). */
const pause = (ms: number): Promise<string> => admin(['CLIENT', 'PAUSE', String(ms), 'ALL']);

/** The connections the server has, besides the one asking. */
const serverClients = async (): Promise<number> => (await admin(['CLIENT', 'LIST', 'TYPE', 'normal'])).trim().split('\n').length - 1;

/** The sockets to the server this process still holds open. */
const openSockets = (): number =>
  (process as unknown as { _getActiveHandles(): Array<{ remotePort?: number; destroyed?: boolean }> })
    ._getActiveHandles()
    .filter((handle) => handle.remotePort === server!.port && handle.destroyed === false).length;

/** Waits up to `ms` for `count()` to reach at most `most`; returns its last value. */
async function settle(count: () => Promise<number> | number, most: number, ms = 3000): Promise<number> {
  const deadline = Date.now() + ms;
  for (;;) {
    const n = await count();
    if (n <= most || Date.now() > deadline) return n;
    await sleep(100);
  }
}

async function open(prefix: string): Promise<RedisBackend> {
  const backend = await RedisBackend.open(`${server!.url}?prefix=${prefix}&timeout=500`);
  opened.push(backend);
  return backend;
}

describe('Redis stalls', () => {
  it('close() right after a call timed out returns, and leaves no socket to Redis open', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const backend = await open('stall-close');
    await backend.revision();
    await pause(1500);
    // The timed-out call replaced its connection; close() comes before the new socket has connected.
    await expect(backend.get('k')).rejects.toThrow(/did not answer/);
    const started = Date.now();
    await backend.close();
    expect(Date.now() - started).toBeLessThan(5000);
    await sleep(1500); // the pause is over: a socket still connecting has connected
    expect(await settle(openSockets, 0)).toBe(0);
    expect(await settle(serverClients, 0)).toBe(0);
  });

  it('keeps a bounded number of connections across repeated stalls, the follower included, and none after close', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const [clientsBefore, socketsBefore] = [await serverClients(), openSockets()]; // none, unless a test above leaked
    const clients = async (): Promise<number> => (await serverClients()) - clientsBefore;
    const sockets = (): number => openSockets() - socketsBefore;
    const backend = await open('stall-cycles');
    const stop = backend.onForeignCommit(() => {});
    expect(await settle(clients, 2)).toBe(2); // the board's connection and the follower's
    for (let cycle = 0; cycle < 2; cycle++) {
      const paused = Date.now();
      await pause(6000);
      await expect(backend.get('k')).rejects.toThrow(/did not answer/);
      // The follower's XREAD BLOCK (5 s) held by the pause times out (0.5 s after its block) by 10.5 s after it.
      await sleep(Math.max(0, paused + 11_000 - Date.now()));
      await backend.revision(); // the board's connection is back
      expect(await settle(clients, 2), `cycle ${cycle}`).toBeLessThanOrEqual(2);
      expect(sockets(), `cycle ${cycle}`).toBeLessThanOrEqual(2);
    }
    stop();
    await backend.close();
    expect(await settle(sockets, 0)).toBe(0);
    expect(await settle(clients, 0)).toBe(0);
  });
});
