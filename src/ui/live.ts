// Server-sent events for the board: tells each connected browser which sections moved, so it re-reads only those.
import type { ServerResponse } from 'node:http';
import type { BoardSource } from './board-reader.js';
import type { PlanClaims } from './board-claims.js';
import { changedKey } from './board-keys.js';
import { FAMILY, allOwners, sectionRanges, userKeys, type Section } from './layout.js';
import { holderId, PresenceRecord } from '../services/presence.js';

/** The browsers looking at one namespace, and the store subscriptions that serve them. */
interface Room {
  namespace: string;
  viewers: Set<ServerResponse>;
  unsubscribe: Array<() => void>;
  dirty: Set<Section>;
  /** callers' signs of life changed since the last event */
  signs: boolean;
  timer?: NodeJS.Timeout;
  /** the revision up to which changed keys were sent */
  at?: number;
  /** the revision up to which callers' signs of life were looked at */
  signsAt?: number;
  flushing?: boolean;
}

const KEEPALIVE_MS = 15_000;
/** How often the store is asked whether it answers while pages are open (they read only when told to). */
const HEALTH_MS = 3_000;
/** Commits that land together (a burst of writes) are told in one event. */
const COALESCE_MS = 30;
/** More changed keys than this in one event: the browser re-reads its page of keys instead. */
const MAX_KEY_CHANGES = 200;

/**
 * Follows the store's change feed for each namespace a browser is looking at (nothing at all while none is) and
 * sends its streams these events:
 * - `hello` `{revision, ok}` on connect and reconnect: read the whole board;
 * - `change` `{revision, sections, keys?}` after commits (by any process) that touched those sections; `keys` holds
 *   the views of the keys that changed (or `{scope, key, deleted}`), so a page patches those rows and re-reads nothing.
 *   A caller's sign of life (written at most every few seconds per caller) moves `threads` (its last call, the roster),
 *   and `plans` only when the caller holds a claim on a step in progress (the lease shown counts from it);
 * - `hello` `{revision: null, ok: false, message}` when the store stops answering (nobody need write for a page to
 *   learn it), and `hello` `{revision, ok: true}` when it answers again. Each stream's `message` is what its `say`
 *   (given to {@link add}) makes of the store's error.
 */
export class LiveBoard {
  private readonly rooms = new Map<string, Room>();
  private keepalive?: NodeJS.Timeout;
  private health?: NodeJS.Timeout;
  private healthy = true;
  private probing = false;
  private closed = false;
  /** how each stream is told why the store failed */
  private readonly says = new WeakMap<ServerResponse, (error: unknown) => string>();

  constructor(
    private readonly source: BoardSource,
    /** who holds which step: without it, every sign of life moves the plans */
    private readonly claims?: PlanClaims,
  ) {}

  add(res: ServerResponse, namespace: string, say: (error: unknown) => string = (error) => (error as Error).message): void {
    if (this.closed) {
      res.end();
      return;
    }
    const room = this.rooms.get(namespace) ?? this.open(namespace);
    room.viewers.add(res);
    this.says.set(res, say);
    res.on('close', () => {
      room.viewers.delete(res);
      if (room.viewers.size === 0) this.shut(namespace, room);
    });
    // A dropped connection is retried by the browser after a second.
    res.write('retry: 1000\n\n');
    void this.source.revision().then(
      (revision) => send(res, 'hello', { revision, ok: true }),
      (error: unknown) => send(res, 'hello', { revision: null, ok: false, message: say(error) }),
    );
    this.keepalive ??= setInterval(() => {
      for (const r of this.rooms.values()) for (const viewer of r.viewers) viewer.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    this.health ??= setInterval(() => void this.probe(), HEALTH_MS);
  }

  close(): void {
    this.closed = true;
    for (const [namespace, room] of this.rooms) {
      for (const viewer of room.viewers) viewer.end();
      this.shut(namespace, room);
    }
  }

  private open(namespace: string): Room {
    const room: Room = { namespace, viewers: new Set(), unsubscribe: [], dirty: new Set(), signs: false };
    this.rooms.set(namespace, room);
    // Subscribed before any browser reads the board, so no commit between its read and the first event is missed.
    const changed = (): void => {
      room.timer ??= setTimeout(() => void this.flush(room), COALESCE_MS);
    };
    for (const { section, range } of sectionRanges(namespace)) {
      room.unsubscribe.push(
        this.source.subscribeRange(range.lo, range.hi, () => {
          room.dirty.add(section);
          changed();
        }),
      );
    }
    const signs = allOwners(namespace, FAMILY.presence);
    room.unsubscribe.push(
      this.source.subscribeRange(signs.lo, signs.hi, () => {
        room.signs = true;
        changed();
      }),
    );
    void this.source.revision().then(
      (revision) => {
        room.at ??= revision;
        room.signsAt ??= revision;
      },
      () => {},
    );
    return room;
  }

  /** Tells every open page when the store stops answering, and when it answers again (a page re-reads then). */
  private async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    let event: ((viewer: ServerResponse) => Record<string, unknown>) | undefined;
    try {
      const revision = await this.source.revision();
      if (!this.healthy) event = () => ({ revision, ok: true });
      this.healthy = true;
    } catch (error) {
      if (this.healthy) event = (viewer) => ({ revision: null, ok: false, message: this.says.get(viewer)!(error) });
      this.healthy = false;
    } finally {
      this.probing = false;
    }
    if (event) for (const room of this.rooms.values()) for (const viewer of room.viewers) send(viewer, 'hello', event(viewer));
  }

  private async flush(room: Room): Promise<void> {
    room.timer = undefined;
    if (room.flushing) {
      room.timer = setTimeout(() => void this.flush(room), COALESCE_MS);
      return;
    }
    room.flushing = true;
    const sections = [...room.dirty];
    room.dirty.clear();
    const signs = room.signs;
    room.signs = false;
    let revision: number | null = null;
    let keys: unknown[] | undefined;
    try {
      if (sections.includes('scopes')) keys = await this.changedKeys(room);
      if (signs && !sections.includes('plans') && (await this.signsMovePlans(room).catch(() => true))) sections.push('plans');
      revision = await this.source.revision();
    } catch {
      // The browser re-reads and reports the store as unavailable if it still is.
    } finally {
      room.flushing = false;
    }
    for (const viewer of room.viewers) send(viewer, 'change', { revision, sections, ...(keys ? { keys } : {}) });
  }

  /** The keys changed since the room's last event, as the board shows them; undefined when too many to send. */
  private async changedKeys(room: Room): Promise<unknown[] | undefined> {
    if (room.at === undefined) return undefined;
    const range = userKeys(room.namespace);
    const page = await this.source.changes({ after: room.at, ...range, limit: MAX_KEY_CHANGES });
    if (page.more || room.at < page.compacted) {
      room.at = await this.source.revision();
      return undefined;
    }
    if (page.changes.length > 0) room.at = Math.max(room.at, page.revision);
    const storageKeys = [...new Set(page.changes.map((c) => c.key))];
    const views = await Promise.all(
      storageKeys.map(async (key) => {
        const { entries } = await this.source.list({ lo: key, hi: `${key}\u0000`, limit: 1 });
        const entry = entries[0]?.[0] === key ? entries[0][1] : undefined;
        return changedKey(room.namespace, key, entry);
      }),
    );
    return views.filter((v) => v !== undefined);
  }

  /**
   * Whether the signs of life written since the room last looked renew the lease of a claim the plans show: one of
   * them is a claim holder's (or there were too many to tell, or one was deleted). A sign of life never brings back a
   * claim that lapsed (a holder silent past its lease starts a new stretch), so only holders' leases move.
   */
  private async signsMovePlans(room: Room): Promise<boolean> {
    if (!this.claims || room.signsAt === undefined) return true;
    const page = await this.source.changes({ after: room.signsAt, ...allOwners(room.namespace, FAMILY.presence), limit: MAX_KEY_CHANGES });
    if (page.more || room.signsAt < page.compacted) {
      room.signsAt = await this.source.revision();
      return true;
    }
    if (page.changes.length > 0) room.signsAt = Math.max(room.signsAt, page.revision);
    const holders = new Set<string>();
    for (const key of new Set(page.changes.map((c) => c.key))) {
      const { entries } = await this.source.list({ lo: key, hi: `${key}\u0000`, limit: 1 });
      const sign = entries[0]?.[0] === key ? PresenceRecord.safeParse(entries[0][1].value) : undefined;
      if (!sign?.success) return true;
      holders.add(holderId(sign.data));
    }
    return holders.size > 0 && this.claims.holdsAny(room.namespace, holders);
  }

  private shut(namespace: string, room: Room): void {
    clearTimeout(room.timer);
    for (const unsubscribe of room.unsubscribe) unsubscribe();
    room.unsubscribe = [];
    if (this.rooms.get(namespace) === room) this.rooms.delete(namespace);
    if (this.rooms.size === 0) {
      clearInterval(this.keepalive);
      clearInterval(this.health);
      this.keepalive = undefined;
      this.health = undefined;
      this.healthy = true;
    }
  }
}

function send(res: ServerResponse, event: string, data: unknown): void {
  if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}
