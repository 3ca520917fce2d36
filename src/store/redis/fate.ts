// What became of a Redis write whose reply was lost: a marker its commit script sets, looked up (and fenced) after.
import { randomUUID } from 'node:crypto';
import { ClientClosedError, ClientOfflineError, ErrorReply } from '@redis/client';
import type { RedisConnection } from './client.js';
import { fateKeyOf } from './scripts.js';

/** The moments of a write a test may break the connection at (see `RedisOptions.failPoint`). */
export type FailPoint = 'begin' | 'check' | 'commit' | 'committed' | 'resolve';

/** How long a call may spend on its attempts (a retry included), and how much longer on finding out a write's fate. */
export const CALL_BUDGET_MS = 11_000;
export const RESOLVE_GRACE_MS = 2500;
/** A marker lives long enough for the call that set it to look it up (that call answers within seconds). */
export const MARKER_TTL_MS = 120_000;
/** A fence outlives any commit script that could still be on its way on a dropped connection. */
const FENCE_TTL_MS = 15 * 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A failure that certainly changed nothing (a read, a commit never sent or refused, a fenced commit): retryable. */
export class Unapplied extends Error {
  constructor(readonly reason: unknown) {
    super(reason instanceof Error ? reason.message : String(reason));
    this.name = 'Unapplied';
  }
}

/** A new marker key for one commit of the board `prefix`. */
export const newMarker = (prefix: string): string => fateKeyOf(prefix, randomUUID());

/** Whether a failed commit call certainly did not run: never sent (offline, closed) or refused by Redis (an error reply). */
export const notRun = (error: unknown): boolean =>
  error instanceof ClientOfflineError || error instanceof ClientClosedError || error instanceof ErrorReply;

/**
 * Looks the write with `marker` up until `deadline`: its revision if it applied; `fenced` if it did not (a fence now
 * stands in its place, so a commit script still on its way can never apply); `unknown` if Redis could not be asked.
 */
export async function lookUp(
  redis: RedisConnection,
  marker: string,
  deadline: number,
  failPoint?: (point: FailPoint) => void | Promise<void>,
): Promise<number | 'fenced' | 'unknown'> {
  for (let pause = 50; Date.now() < deadline; pause = Math.min(pause * 2, 500)) {
    try {
      await failPoint?.('resolve');
      if (await redis.ready(deadline)) {
        const timeout = Math.max(1, Math.min(redis.timeoutMs, deadline - Date.now()));
        const reply = await redis.script('RESOLVE', [String(FENCE_TTL_MS)], [marker], timeout);
        return reply === 'fenced' ? 'fenced' : Number(reply);
      }
    } catch {
      // not reachable yet: ask again after a pause, while there is time
    }
    await sleep(Math.min(pause, Math.max(0, deadline - Date.now())));
  }
  return 'unknown';
}

/** A read's failure changed nothing. */
export const unapplied = <T>(promise: Promise<T>): Promise<T> =>
  promise.catch((error: unknown) => {
    throw error instanceof Unapplied ? error : new Unapplied(error);
  });
