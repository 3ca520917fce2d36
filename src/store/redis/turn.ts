// The turn: how a Redis transaction that keeps losing to other processes' commits gets to commit at last.
import { randomUUID } from 'node:crypto';
import type { RedisConnection } from './client.js';

/** Conflicts in a row after which a transaction waits for the turn and takes it. */
export const TURN_AFTER_CONFLICTS = 6;
/** How long a turn lives unless its holder renews it: all that a holder that died can block the others. */
export const TURN_TTL_MS = 2000;
const RENEW_EVERY_MS = TURN_TTL_MS / 4;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One transaction's claim on the board's turn key (see `turn` in scripts.ts). Optimistic commits are fair inside a
 * process (key-locks.ts) but not across processes: a long transaction can lose to a flood of short ones until it
 * gives up. After {@link TURN_AFTER_CONFLICTS} conflicts in a row it waits until the turn is free and takes it; then
 * every other commit that writes is refused (a conflict: it backs off and runs again, and queues for the turn in its
 * turn if it keeps losing), so what the holder reads stays as it read it. The holder renews the turn while it runs, up
 * to its conflict deadline; its commit deletes it, and {@link release} deletes it on any other way out. A holder that
 * dies blocks the others for {@link TURN_TTL_MS} at most.
 */
export class Turn {
  /** sent with every commit of the transaction: only the commit that holds the turn may write while it is taken */
  readonly token = randomUUID();
  /** whether this transaction took the turn and has not seen it deleted (by its commit, a release, or expiry) */
  private held = false;
  private renewing: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: RedisConnection,
    private readonly key: string,
    /** the transaction's conflict deadline: the turn is not renewed past it */
    private readonly until: number,
  ) {}

  /**
   * Waits until this transaction holds the turn (taking it when free), or until the deadline. Gives up waiting at
   * once when Redis cannot be asked: the attempt that follows meets the same failure and reports it.
   */
  async take(): Promise<void> {
    for (let pause = 5; !this.held && Date.now() < this.until; pause = Math.min(pause * 2, 50)) {
      let taken: boolean;
      try {
        taken = Number(await this.redis.script('TURN', [this.token, 'take', String(TURN_TTL_MS)], [this.key])) === 1;
      } catch {
        return;
      }
      if (taken) {
        this.held = true;
        this.renewing = setInterval(() => this.renew(), RENEW_EVERY_MS);
        this.renewing.unref();
        return;
      }
      await sleep(pause * (0.5 + Math.random()));
    }
  }

  /** Gives the turn back, if this transaction still holds it; never fails (a turn left behind expires on its own). */
  async release(): Promise<void> {
    if (!this.held) return;
    this.stop();
    await this.redis.script('TURN', [this.token, 'release'], [this.key]).catch(() => {});
  }

  private renew(): void {
    if (Date.now() >= this.until) {
      clearInterval(this.renewing); // left to expire, unless released first
      return;
    }
    this.redis
      .script('TURN', [this.token, 'renew', String(TURN_TTL_MS)], [this.key])
      .then((renewed) => {
        if (Number(renewed) !== 1) this.stop(); // committed (the commit deleted it), lapsed or taken by another
      })
      .catch(() => {}); // Redis did not answer: try again at the next tick, while the turn has not expired
  }

  private stop(): void {
    this.held = false;
    clearInterval(this.renewing);
  }
}
