// The Postgres backend's commit listener: one LISTEN connection per process, caught up from the change log.
import pg from 'pg';
import { CommitListeners } from '../commit-listeners.js';
import type { CommitEvent } from '../types.js';
import { dropAfter } from './connections.js';

/** What a commit's doorbell carries: its revision, its keys (absent when too many to fit) and the sender. */
export interface Doorbell {
  r: number;
  k?: string[];
  i: string;
}

/** One snapshot of the change log after a revision: the current revision, `compacted`, and the entries' keys. */
export interface LogTail {
  revision: number;
  compacted: number;
  rows: Array<{ revision: number; key: string }>;
}

export interface ListenerOptions {
  /** connection settings of the dedicated listening connection */
  config: pg.ClientConfig;
  /** the channel commits ring on */
  channel: string;
  /** this process's id in doorbells: its own commits are not reported back to it */
  instance: string;
  /** the safety poll's period, ms */
  pollMs: number;
  /** the period while doorbells go unheard, and for how long after the last unannounced commit (tests shorten them) */
  deafPollMs?: number;
  deafForMs?: number;
  /** reads the change log after a revision on the given connection, in one snapshot */
  readLog(client: pg.ClientBase, after: number, limit: number): Promise<LogTail>;
}

/** A doorbell must fit a NOTIFY payload (8000 bytes); larger commits ring without their keys. */
const DOORBELL_BYTES = 7000;

/** The doorbell's own small transaction, committed asynchronously (a doorbell lost in a crash is found by polling). */
export function doorbellStatement(channel: string, bell: Doorbell): string {
  if (Buffer.byteLength(JSON.stringify(bell)) > DOORBELL_BYTES) bell = { r: bell.r, i: bell.i };
  return `BEGIN; SET LOCAL synchronous_commit = off; SELECT pg_notify(${pg.escapeLiteral(channel)}, ${pg.escapeLiteral(JSON.stringify(bell))}); COMMIT`;
}

const CATCH_UP_LIMIT = 1000;
/**
 * When a poll finds commits whose doorbells never came (a pooler in transaction mode, such as PgBouncer's, does not
 * deliver notifications), the listener polls this often instead, until no poll has found one for this long. A commit
 * counts as unannounced once its doorbell is still missing this long after the poll found it: a poll can read a commit
 * in the instant before its doorbell arrives, and that alone must not make every process poll fast for a minute.
 */
const DEAF_POLL_MS = 200;
const DEAF_FOR_MS = 60_000;

/**
 * Tells listeners about commits made by other processes, soon after they commit, or reports a gap.
 *
 * Writers ring `pg_notify` after their commit. Revisions are dense (every writing commit takes the next one under the
 * store's lock), so a missed doorbell can be detected: the safety poll reads the change log after the last revision
 * accounted for, reports logged commits nobody rang for, and reports a gap for a revision that neither rang nor left
 * log entries (a writer killed between commit and doorbell) once it has stayed silent for a whole poll period. On every
 * (re)connect the listener LISTENs first, then catches up the same way (strictly), so nothing committed while the
 * connection was down is missed. With no listener there is no poll; the connection is closed after a short linger.
 */
export class CommitListener {
  private readonly listeners = new CommitListeners({
    start: () => this.start(),
    idle: () => {
      this.stopPolling();
      if (this.retry) clearTimeout(this.retry);
      this.retry = undefined;
    },
    stop: () => this.disconnect(),
  });
  private client?: pg.Client;
  private connecting?: Promise<void>;
  private ready = false;
  /** every revision up to here is accounted for (-1: not yet connected) */
  private cursor = -1;
  /** doorbells heard above `cursor` */
  private readonly rung = new Set<number>();
  /** revisions at or below `cursor` that neither rang nor left log entries at the last poll */
  private suspects = new Set<number>();
  private poller?: NodeJS.Timeout;
  private retry?: NodeJS.Timeout;
  private retryMs = 100;
  /** until when the listener polls every DEAF_POLL_MS: a poll found commits that nobody's doorbell announced */
  private deafUntil = 0;
  /** commits a poll reported from the log before their doorbell came (when), and the timer that judges them */
  private readonly unannounced = new Map<number, number>();
  private judging?: NodeJS.Timeout;
  private pollEveryMs = 0;
  private polling = false;
  private closed = false;

  constructor(private readonly options: ListenerOptions) {}

  subscribe(listener: (event: CommitEvent) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  /** This process committed `revision`: it needs no doorbell of its own. */
  ownCommit(revision: number): void {
    if (this.ready && revision > this.cursor) this.rung.add(revision);
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.listeners.close(); // disconnects
    this.stopPolling();
    for (const timer of [this.retry, this.judging]) if (timer) clearTimeout(timer);
    await client?.end().catch(() => {});
  }

  private start(): void {
    if (this.closed || this.listeners.size === 0) return;
    if (this.ready) this.startPolling();
    else if (!this.connecting && !this.retry) this.connecting = this.connect().finally(() => (this.connecting = undefined));
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.options.config);
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (client === this.client && message.channel === this.options.channel) this.heard(message.payload);
    });
    this.client = client;
    try {
      await client.connect();
      await client.query(`LISTEN "${this.options.channel}"`);
      if (client !== this.client) return;
      if (this.cursor < 0) {
        // First connection: anything committed before LISTEN took effect is covered by telling every waiter to
        // re-read once.
        const tail = await this.options.readLog(client, Number.MAX_SAFE_INTEGER, 1);
        if (client !== this.client) return;
        this.cursor = tail.revision;
        this.ready = true;
        this.listeners.emit({ gap: true });
      } else {
        this.ready = true;
        await this.poll(true);
      }
      this.retryMs = 100;
      this.startPolling();
    } catch (error) {
      this.lost(client, error);
    }
  }

  /**
   * The listening connection failed or ended (`error`: how its statement failed): forget it and, while someone listens,
   * connect again with backoff. A statement given up on is cancelled on the server before the connection is dropped.
   */
  private lost(client: pg.Client, error?: unknown): void {
    if (client !== this.client) return;
    this.client = undefined;
    this.ready = false;
    this.stopPolling();
    dropAfter(error, this.options.config, client, () => void client.end().catch(() => {}));
    if (this.closed || this.listeners.size === 0 || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.start();
    }, this.retryMs);
    this.retry.unref();
    this.retryMs = Math.min(this.retryMs * 2, 2000);
  }

  private disconnect(): void {
    const client = this.client;
    this.client = undefined;
    this.ready = false;
    this.cursor = -1;
    this.rung.clear();
    this.suspects.clear();
    this.unannounced.clear();
    client?.end().catch(() => {});
  }

  private heard(payload: string | undefined): void {
    let bell: Doorbell;
    try {
      bell = JSON.parse(payload ?? '') as Doorbell;
    } catch {
      return;
    }
    if (!Number.isSafeInteger(bell.r)) return;
    this.suspects.delete(bell.r);
    this.unannounced.delete(bell.r); // late, not missing: the poll merely read the commit first
    // A commit already accounted for (a second doorbell, rung again after a lost reply) is not reported twice.
    if (bell.r <= this.cursor || this.rung.has(bell.r)) return;
    this.rung.add(bell.r);
    if (bell.i === this.options.instance) return;
    this.listeners.emit(Array.isArray(bell.k) ? { revision: bell.r, keys: bell.k } : { gap: true });
  }

  /**
   * Once the doorbells of commits a poll found first have had DEAF_POLL_MS to arrive, any still missing means
   * doorbells go unheard: the listener polls fast for a while.
   */
  private judgeUnannounced(): void {
    if (this.judging) return;
    const graceMs = this.options.deafPollMs ?? DEAF_POLL_MS;
    const oldest = this.unannounced.values().next().value!; // found first: the map keeps the order they were found in
    this.judging = setTimeout(
      () => {
        this.judging = undefined;
        if (!this.ready || this.listeners.size === 0) {
          this.unannounced.clear();
          return;
        }
        const now = Date.now();
        let missing = false;
        for (const [revision, foundAt] of this.unannounced) {
          if (now - foundAt < graceMs) continue;
          missing = true;
          this.unannounced.delete(revision);
        }
        if (missing) {
          this.deafUntil = now + (this.options.deafForMs ?? DEAF_FOR_MS);
          this.startPolling();
        }
        if (this.unannounced.size > 0) this.judgeUnannounced();
      },
      Math.max(0, oldest + graceMs - Date.now()),
    );
    this.judging.unref();
  }

  private startPolling(): void {
    const deafPollMs = this.options.deafPollMs ?? DEAF_POLL_MS;
    const every = Date.now() < this.deafUntil ? Math.min(deafPollMs, this.options.pollMs) : this.options.pollMs;
    if (this.poller && every === this.pollEveryMs) return;
    this.stopPolling();
    if (this.listeners.size === 0) return;
    this.pollEveryMs = every;
    this.poller = setInterval(() => void this.poll(false), every);
    this.poller.unref();
  }

  private stopPolling(): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
  }

  /**
   * Accounts for every revision after `cursor`: rung ones are done; logged ones nobody rang for are reported from
   * the log; silent ones are a gap (`strict`, after a reconnect) or suspects given one more period to ring. The query
   * runs on the listening connection, so a dead connection is found here too.
   */
  private async poll(strict: boolean): Promise<void> {
    const client = this.client;
    if (!client || !this.ready || (this.polling && !strict)) return;
    this.polling = true;
    try {
      const tail = await this.options.readLog(client, this.cursor, CATCH_UP_LIMIT);
      if (client !== this.client) return;
      let gap = this.suspects.size > 0;
      const suspects = new Set<number>();
      if (tail.revision > this.cursor) {
        if (tail.compacted > this.cursor || tail.rows.length >= CATCH_UP_LIMIT || tail.revision - this.cursor > 100_000) {
          gap = true;
        } else {
          const logged = new Map<number, string[]>();
          for (const row of tail.rows) logged.set(row.revision, [...(logged.get(row.revision) ?? []), row.key]);
          for (let revision = this.cursor + 1; revision <= tail.revision; revision++) {
            if (this.rung.has(revision)) continue;
            const keys = logged.get(revision);
            if (keys) {
              this.listeners.emit({ revision, keys });
              if (!strict) this.unannounced.set(revision, Date.now());
            } else if (strict) gap = true;
            else suspects.add(revision);
          }
        }
        this.cursor = tail.revision;
        for (const revision of this.rung) if (revision <= this.cursor) this.rung.delete(revision);
      }
      this.suspects = suspects;
      if (gap) this.listeners.emit({ gap: true });
      if (this.unannounced.size > 0) this.judgeUnannounced();
      this.startPolling(); // faster while doorbells go unheard, back to the safety poll once they are heard again
    } catch (error) {
      this.lost(client, error);
    } finally {
      this.polling = false;
    }
  }
}
