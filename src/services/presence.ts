// Signs of life: one record per (agent, thread) saying when it last made a call, written at most every few seconds.
import { randomUUID } from 'node:crypto';
import * as z from 'zod';
import type { Json } from '../store/types.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import { copyIn, markIndexedIn } from './presence-index.js';
import { decode } from './records.js';
import type { Session } from './session.js';

/**
 * What is kept of a caller: who (agent name, type, thread, MCP client name) and when it was last seen (the store's
 * clock). `since` is when its current unbroken stretch of life began: a caller silent for longer than the claim
 * lease starts a new stretch, so a claim granted before the gap stays lapsed when the caller comes back.
 */
export const PresenceRecord = z.object({
  agent: z.string().optional(),
  agentType: z.string().optional(),
  thread: z.string(),
  client: z.string().optional(),
  lastSeen: z.number(),
  since: z.number(),
  /** when its stdio connection closed (the roster shows it `gone` until it calls again) */
  gone: z.number().optional(),
  /** which connection wrote it: one closing does not mark gone a holder another connection has shown life for since */
  conn: z.string().optional(),
});
export type PresenceRecord = z.infer<typeof PresenceRecord>;
export const presenceOf = (value: Json | undefined): PresenceRecord | undefined =>
  value === undefined ? undefined : decode(PresenceRecord, value, 'presence');

/** Who holds a claim: an agent name (when the caller has one) in a thread. Clones in other threads are others. */
export interface Holder {
  agent?: string;
  thread: string;
}

/** A holder as one string (maps of signs of life and claims are keyed by it). */
export const holderId = (h: Holder): string => `${h.agent ?? ''}\u0000${h.thread}`;

/**
 * How much of the MCP client's name (`clientInfo.name`, whatever the client sent) is kept: a longer one is cut, with
 * "…", so no caller can make every roster, board and claim check that reads signs of life carry megabytes.
 */
export const MAX_CLIENT_CHARS = 128;
const clientName = (name: string): string => (name.length > MAX_CLIENT_CHARS ? `${name.slice(0, MAX_CLIENT_CHARS)}…` : name);

/** The most often a holder's sign of life is written. */
const MAX_INTERVAL_MS = 5000;
/** How often a holder's sign of life is written at most, under a lease: min(5 s, lease / 4). */
const renewalIntervalMs = (leaseMs: number): number => Math.max(1, Math.min(MAX_INTERVAL_MS, Math.floor(leaseMs / 4)));
/**
 * Until when a sign of life written at `lastSeen` keeps its holder's claims: the lease from the holder's last call,
 * which may have come up to one renewal interval after the write (calls in between are not written).
 */
export const aliveUntil = (lastSeen: number, leaseMs: number): number => lastSeen + leaseMs + renewalIntervalMs(leaseMs);
/**
 * Last writes per store and holder, shared by every connection of the process: a stateless HTTP request gets a new
 * connection each time, and still renews at most once per interval.
 */
const WRITTEN = new WeakMap<VersionedStore, Map<string, number>>();

/** How many holders' last writes this process keeps for `store` (those written within the last renewal interval). */
export const signsOfLifeKept = (store: VersionedStore): number => WRITTEN.get(store)?.size ?? 0;

/** Renewals under way per store and holder (at most one each), shared like {@link WRITTEN}. */
const RENEWING = new WeakMap<VersionedStore, Set<string>>();
/** How long a reply waits for its renewal (a few ms when the store is reachable). */
const REPLY_WAIT_MS = 500;

/** How long a sign of life is kept at least (the team roster lists callers seen within the last hour). */
const MIN_KEEP_MS = 3600 * 1000;

/**
 * One connection's signs of life. Any tool call that succeeds renews the caller's record, but at most once every
 * min(5 s, lease / 4) per holder, so renewals cost one small write per holder every few seconds whatever the call
 * rate; claims judge liveness from this record (see {@link claimAlive}).
 */
export class Presence {
  readonly intervalMs: number;
  /** when each holder's sign of life was last written through this store, by any connection of this process */
  private get written(): Map<string, number> {
    let map = WRITTEN.get(this.store);
    if (!map) {
      map = new Map();
      WRITTEN.set(this.store, map);
    }
    return map;
  }
  /** the MCP client's name, once known (the server sets this) */
  client: () => string | undefined = () => undefined;
  /** this connection, in the records it writes */
  private readonly conn = randomUUID().slice(0, 8);

  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    /** `--claim-lease` */
    readonly leaseMs: number,
    /** `--roster-window`: how long a sign of life is kept (and at least twice the lease) */
    private readonly keepMs = MIN_KEEP_MS,
  ) {
    this.intervalMs = renewalIntervalMs(leaseMs);
  }

  /** The caller, as a claim holder. */
  holder(): Holder {
    const { agent, thread } = this.session.identity;
    return agent === undefined ? { thread } : { agent, thread };
  }

  key(holder: Holder): string {
    return this.session.keys.presence(holder.agent, holder.thread);
  }

  /** Renews the caller's sign of life unless it was written within the interval. Never fails the call. */
  async touch(): Promise<void> {
    const key = this.key(this.holder());
    const at = this.written.get(key);
    if (at !== undefined && this.store.now() - at < this.intervalMs) return;
    const renewing = RENEWING.get(this.store) ?? new Set<string>();
    RENEWING.set(this.store, renewing);
    if (renewing.has(key)) return;
    renewing.add(key);
    const renewal = this.store
      .transact(async (tx) => {
        await this.touchIn(tx);
        return {};
      })
      // a missed renewal is made up by the next call; the call itself goes on and reports its own failures
      .then(
        () => {},
        () => {},
      )
      .finally(() => renewing.delete(key));
    // The reply waits for it only briefly: one held up by a broken link (a call's whole time) goes on without it.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      renewal,
      new Promise((resolve) => {
        timer = setTimeout(resolve, REPLY_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Writes the caller's sign of life inside a transaction (claims and step moves do, so a grant is always inside one stretch). */
  async touchIn(tx: StoreTx): Promise<PresenceRecord> {
    const holder = this.holder();
    const key = this.key(holder);
    const previous = await this.readIn(tx, holder);
    const now = tx.now;
    const who = this.session.identity;
    const client = this.client();
    const record: PresenceRecord = {
      ...(holder.agent !== undefined ? { agent: holder.agent } : {}),
      ...(who.agentType !== undefined ? { agentType: who.agentType } : {}),
      thread: holder.thread,
      ...(client !== undefined ? { client: clientName(client) } : {}),
      lastSeen: now,
      since: previous !== undefined && aliveUntil(previous.lastSeen, this.leaseMs) >= now ? Math.min(previous.since, now) : now,
      conn: this.conn,
    };
    const options = { by: this.session.by, ttlMs: Math.max(this.keepMs, 2 * this.leaseMs) };
    await markIndexedIn(tx, this.store, this.session.keys, this.session.by);
    await tx.set(key, record as Json, options);
    await copyIn(tx, this.session.keys, record, previous, (copy) => tx.set(copy, record as Json, options), this.session.by);
    // kept oldest first, and forgotten once older than the interval (then they spare no write): the map holds only the
    // holders written within the last interval, however many distinct threads and agents a long-lived server meets
    const written = this.written;
    written.delete(key);
    written.set(key, now);
    for (const [k, t] of written) {
      if (now - t < this.intervalMs) break;
      written.delete(k);
    }
    return record;
  }

  /**
   * Makes sure the caller's sign of life is current inside a claim's or step move's transaction, writing it only when
   * the tool layer has not just done so (a caller without it, such as code using the services directly). Writing it
   * on every claim would make every other worker's claim transaction, which reads it, conflict.
   */
  async renewIn(tx: StoreTx): Promise<void> {
    const previous = await this.readIn(tx, this.holder());
    if (previous !== undefined && tx.now - previous.lastSeen < this.intervalMs) return;
    await this.touchIn(tx);
  }

  /**
   * Marks the caller `gone` (its stdio connection closed): best-effort, its last sign of life is kept as it was, so
   * its claims lapse by the lease as always. The next call by the same holder makes it present again. When another
   * connection of the same holder wrote the last sign of life (a restarted agent's new process, already calling), the
   * holder is not gone, and nothing is written.
   */
  async leave(): Promise<void> {
    const holder = this.holder();
    const key = this.key(holder);
    this.written.delete(key);
    try {
      await this.store.transact(async (tx) => {
        const previous = await this.readIn(tx, holder);
        // none, or written by another connection of the same holder (a new process already at work): not gone
        if (previous === undefined || (previous.conn !== undefined && previous.conn !== this.conn)) return {};
        const entry = await tx.get(key);
        const ttlMs = entry?.expiresAt !== undefined ? Math.max(1, entry.expiresAt - tx.now) : undefined;
        const options = { by: this.session.by, ...(ttlMs ? { ttlMs } : {}) };
        const gone = { ...previous, gone: tx.now };
        await tx.set(key, gone as Json, options);
        await copyIn(tx, this.session.keys, gone, previous, (copy) => tx.set(copy, gone as Json, options), this.session.by);
        return {};
      });
    } catch {
      // the roster turns the entry idle, then gone, by its window
    }
  }

  /** A holder's sign of life as a transaction (or the store) sees it (`undefined` when none, or unreadable). */
  async readIn(tx: Pick<StoreTx, 'get'>, holder: Holder): Promise<PresenceRecord | undefined> {
    try {
      return presenceOf((await tx.get(this.key(holder)))?.value);
    } catch {
      return undefined;
    }
  }
}

/**
 * When a claim granted at `grantedAt` with lease `leaseMs` ends, as its holder's sign of life says at `now`; undefined
 * when it lapsed (see {@link claimAlive}).
 */
export function leaseEnd(grantedAt: number, leaseMs: number, presence: PresenceRecord | undefined, now: number): number | undefined {
  if (!claimAlive(grantedAt, leaseMs, presence, now)) return undefined;
  return Math.max(grantedAt + leaseMs, presence ? aliveUntil(presence.lastSeen, leaseMs) : 0);
}

/**
 * Whether a claim granted at `grantedAt` with lease `leaseMs` is still alive at `now`: its holder has shown life
 * within the lease (see {@link aliveUntil}), in the same unbroken stretch the claim was granted in. With no record,
 * the grant itself is the last sign of life.
 */
export function claimAlive(grantedAt: number, leaseMs: number, presence: PresenceRecord | undefined, now: number): boolean {
  if (presence === undefined) return grantedAt + leaseMs >= now;
  // a grant within a renewal interval of the last write is not written itself
  if (presence.lastSeen < grantedAt) return Math.max(grantedAt + leaseMs, aliveUntil(presence.lastSeen, leaseMs)) >= now;
  if (presence.since > grantedAt) return false;
  return aliveUntil(presence.lastSeen, leaseMs) >= now;
}
