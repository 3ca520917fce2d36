// The history service: an append-only event log per thread, paged and pruned.
import { invalid, writing } from '../errors.js';
import { checkName, idempotent, type CallOptions } from '../context.js';
import * as z from 'zod';
import { jsonBytes } from '../store/json-text.js';
import type { Json, KeyRange } from '../store/types.js';
import { anyJson, decode } from './records.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import type { Session } from './session.js';
import { notOurCursor, otherListing } from './cursor.js';

export interface HistoryEntry {
  seq: number;
  kind: string;
  content: string;
  data?: Json;
  at: string;
  by: string;
}

/** A stored history event, and a thread's last sequence number. */
export const HistoryRecord = z.object({ kind: z.string(), content: z.string(), data: anyJson.optional() });
const Counter = z.number().int().min(0);

const KIND_RE = /^[a-z][a-z0-9_.-]{0,63}$/;
/** The kinds of event the server appends itself: by `signal`, `run_end` and a `plan_update` reassignment. */
const SERVER_KINDS = ['signal', 'run_end', 'plan_reassign'] as const;
export const HISTORY_DEFAULT_LIMIT = 50;
export const HISTORY_MAX_LIMIT = 500;
const SCAN_BUDGET = 5000;

/** An append-only event log per thread, with sequence numbers that never repeat (pruning included). */
export class HistoryService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
  ) {}

  private entryKey(thread: string, seq: number): string {
    return this.session.keys.historyEvent(thread, seq);
  }
  seqKey(thread: string): string {
    return this.session.keys.historyCounter(thread);
  }
  range(thread: string): KeyRange {
    return this.session.keys.historyRange(thread);
  }

  /**
   * Appends an event of the caller's. The kinds the server writes itself (`signal`, `run_end`, `plan_reassign`) are
   * refused unless `own` (the signal service's): history is the record of what happened, and those say the server saw it.
   */
  async append(
    args: { kind: string; content: string; data?: Json; idempotencyKey?: string },
    call: CallOptions,
    own = false,
  ): Promise<{ seq: number }> {
    if (!own && (SERVER_KINDS as readonly string[]).includes(args.kind)) {
      throw invalid(`kind "${args.kind}" is one the server writes itself, so it cannot be appended. Use another kind (e.g. "note").`, {
        kind: args.kind,
        path: 'kind',
      });
    }
    // kind and content are checked text: only data can be refused as a value
    const { result } = await this.store.transact(async (tx) => ({ seq: await writing('data', () => this.appendIn(tx, args)) }), {
      ...idempotent(this.session.identity, call, args),
    });
    return result;
  }

  /** Appends inside an existing transaction (run_end, plan_reassign). */
  async appendIn(tx: StoreTx, args: { kind: string; content: string; data?: Json }): Promise<number> {
    if (!KIND_RE.test(args.kind)) {
      throw invalid('kind must be 1-64 lowercase letters, digits, "_", "." or "-", starting with a letter (e.g. "tool_call").', {
        kind: args.kind.slice(0, 80),
        path: 'kind',
      });
    }
    if (typeof args.content !== 'string') throw invalid('content must be a string.', { path: 'content' });
    const thread = this.session.identity.thread;
    const counter = await tx.update(this.seqKey(thread), 'increment', 1, { by: this.session.by });
    const seq = decode(Counter, counter.value, 'history counter');
    const entry = { kind: args.kind, content: args.content, ...(args.data !== undefined ? { data: args.data } : {}) };
    await tx.set(this.entryKey(thread, seq), entry as Json, { by: this.session.by, ifVersion: 0 });
    return seq;
  }

  /**
   * A page of a thread's events (this thread's by default; reads are open within the namespace), newest first unless
   * `order` is `asc`, only events after `afterSeq` when given. `nextCursor` continues the page; `nextAfterSeq`
   * (oldest first only) is the last seq returned, to follow the log.
   */
  async list(args: {
    thread?: string;
    afterSeq?: number;
    limit?: number;
    kind?: string;
    order?: 'asc' | 'desc';
    cursor?: string;
    /** a page ends before an event that would take its JSON over this many bytes (its first event always comes) */
    maxBytes?: number;
  }): Promise<{
    entries: HistoryEntry[];
    nextCursor?: string;
    nextAfterSeq?: number;
  }> {
    const limit = args.limit ?? HISTORY_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > HISTORY_MAX_LIMIT) {
      throw invalid(`limit must be a whole number from 1 to ${HISTORY_MAX_LIMIT}.`, { limit, path: 'limit' });
    }
    if (args.afterSeq !== undefined && (!Number.isSafeInteger(args.afterSeq) || args.afterSeq < 0)) {
      throw invalid('afterSeq must be a whole number, 0 or more.', { afterSeq: args.afterSeq, path: 'afterSeq' });
    }
    const order = args.order ?? 'desc';
    const thread = args.thread === undefined ? this.session.identity.thread : checkName('thread', args.thread, 'thread');
    const floor = args.afterSeq ?? 0;
    const resume = args.cursor === undefined ? undefined : readCursor(args.cursor, { t: thread, o: order, k: args.kind ?? '' });
    const stored = (await this.store.get(this.seqKey(thread)))?.value;
    const last = stored === undefined ? 0 : decode(Counter, stored, 'history counter');
    const entries: HistoryEntry[] = [];
    const cursorAt = (seq: number): string => writeCursor({ t: thread, o: order, k: args.kind ?? '', s: seq });
    // Windows of seqs, walked in the asked order; pruned seqs are simply absent.
    let lo = order === 'asc' ? Math.max(floor, resume ?? 0) + 1 : floor + 1;
    let hi = order === 'asc' ? last : Math.min(last, (resume ?? last + 1) - 1);
    let scanned = 0;
    let bytes = 0;
    while (lo <= hi) {
      const window = Math.min(500, limit + 1);
      const a = order === 'asc' ? lo : Math.max(lo, hi - window + 1);
      const b = order === 'asc' ? Math.min(hi, lo + window - 1) : hi;
      const { entries: rows } = await this.store.list({ lo: this.entryKey(thread, a), hi: this.entryKey(thread, b + 1), limit: window });
      const page = order === 'asc' ? rows : rows.reverse();
      for (const [key, entry] of page) {
        const seq = this.session.keys.historySeq(key);
        const v = decode(HistoryRecord, entry.value, 'history event');
        if (args.kind !== undefined && v.kind !== args.kind) continue;
        const event: HistoryEntry = {
          seq,
          kind: v.kind,
          content: v.content,
          ...(v.data !== undefined ? { data: v.data } : {}),
          at: new Date(entry.updatedAt).toISOString(),
          by: entry.updatedBy,
        };
        if (args.maxBytes !== undefined) bytes += jsonBytes(event) + 1;
        const full = entries.length === limit || (entries.length > 0 && args.maxBytes !== undefined && bytes > args.maxBytes);
        if (full) return { entries, nextCursor: cursorAt(entries[entries.length - 1].seq), ...follow(order, entries) };
        entries.push(event);
      }
      scanned += b - a + 1;
      if (order === 'asc') lo = b + 1;
      else hi = a - 1;
      if (scanned >= SCAN_BUDGET && lo <= hi)
        return { entries, nextCursor: cursorAt(order === 'asc' ? lo - 1 : hi + 1), ...follow(order, entries) };
    }
    return { entries, ...follow(order, entries) };
  }

  async prune(args: { keepLast: number; idempotencyKey?: string }, call: CallOptions): Promise<{ removed: number }> {
    if (!Number.isSafeInteger(args.keepLast) || args.keepLast < 0) {
      throw invalid('keepLast must be a whole number, 0 or more.', { keepLast: args.keepLast, path: 'keepLast' });
    }
    const thread = this.session.identity.thread;
    const { result } = await this.store.transact(
      async (tx) => {
        const stored = (await tx.get(this.seqKey(thread)))?.value;
        const last = stored === undefined ? 0 : decode(Counter, stored, 'history counter');
        const cut = last - args.keepLast;
        if (cut <= 0) return { removed: 0 };
        return { removed: await tx.deleteRange(this.range(thread).lo, this.entryKey(thread, cut + 1)) };
      },
      { ...idempotent(this.session.identity, call, args) },
    );
    return result;
  }
}

/** Oldest first, the last seq returned: pass it back as afterSeq to follow the log. */
function follow(order: 'asc' | 'desc', entries: HistoryEntry[]): { nextAfterSeq?: number } {
  return order === 'asc' && entries.length > 0 ? { nextAfterSeq: entries[entries.length - 1].seq } : {};
}

type Listing = { t: string; o: string; k: string };

function writeCursor(at: Listing & { s: number }): string {
  return Buffer.from(JSON.stringify(at), 'utf8').toString('base64url');
}

/** The seq a history cursor continues from; INVALID_ARGUMENT for a cursor of another listing or none of ours. */
function readCursor(cursor: string, listing: Listing): number {
  let parsed: Partial<Listing & { s: number }> | undefined;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (!parsed || !Number.isSafeInteger(parsed.s)) {
    throw notOurCursor();
  }
  if (parsed.t !== listing.t || parsed.o !== listing.o || parsed.k !== listing.k) {
    throw otherListing('thread, order or kind');
  }
  return parsed.s!;
}
