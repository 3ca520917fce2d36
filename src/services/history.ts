// The history service: an append-only event log per thread, paged and pruned.
import { invalid } from '../errors.js';
import { idempotent, type CallOptions } from '../context.js';
import * as z from 'zod';
import type { Json } from '../store/types.js';
import { anyJson, decode } from './records.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import type { Session } from './session.js';

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
  range(thread: string): { lo: string; hi: string } {
    return this.session.keys.historyRange(thread);
  }

  async append(args: { kind: string; content: string; data?: Json; idempotencyKey?: string }, call: CallOptions): Promise<{ seq: number }> {
    const { result } = await this.store.transact(async (tx) => ({ seq: await this.appendIn(tx, args) }), {
      ...idempotent(this.session.identity, call, args),
    });
    return result;
  }

  /** Appends inside an existing transaction (signals, run_end). */
  async appendIn(tx: StoreTx, args: { kind: string; content: string; data?: Json }): Promise<number> {
    if (!KIND_RE.test(args.kind)) {
      throw invalid('kind must be 1-64 lowercase letters, digits, "_", "." or "-", starting with a letter (e.g. "tool_call").', {
        kind: args.kind.slice(0, 80),
      });
    }
    if (typeof args.content !== 'string') throw invalid('content must be a string.');
    const thread = this.session.identity.thread;
    const counter = await tx.update(this.seqKey(thread), 'increment', 1, { by: this.session.by });
    const seq = decode(Counter, counter.value, 'history counter');
    const entry = { kind: args.kind, content: args.content, ...(args.data !== undefined ? { data: args.data } : {}) };
    await tx.set(this.entryKey(thread, seq), entry as Json, { by: this.session.by, ifVersion: 0 });
    return seq;
  }

  async list(args: { afterSeq?: number; limit?: number; kind?: string }): Promise<{ entries: HistoryEntry[]; nextAfterSeq?: number }> {
    const limit = args.limit ?? HISTORY_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > HISTORY_MAX_LIMIT) {
      throw invalid(`limit must be a whole number from 1 to ${HISTORY_MAX_LIMIT}.`, { limit });
    }
    if (args.afterSeq !== undefined && (!Number.isSafeInteger(args.afterSeq) || args.afterSeq < 0)) {
      throw invalid('afterSeq must be a whole number, 0 or more.', { afterSeq: args.afterSeq });
    }
    const thread = this.session.identity.thread;
    const range = this.range(thread);
    let after = args.afterSeq ? this.entryKey(thread, args.afterSeq) : undefined;
    const entries: HistoryEntry[] = [];
    let scanned = 0;
    let lastSeq: number | undefined;
    for (;;) {
      const page = await this.store.list({ ...range, after, limit: Math.min(500, limit + 1) });
      for (const [key, entry] of page.entries) {
        const seq = this.session.keys.historySeq(key);
        scanned++;
        const v = decode(HistoryRecord, entry.value, 'history event');
        if (args.kind === undefined || v.kind === args.kind) {
          if (entries.length === limit) return { entries, nextAfterSeq: entries[entries.length - 1].seq };
          entries.push({
            seq,
            kind: v.kind,
            content: v.content,
            ...(v.data !== undefined ? { data: v.data } : {}),
            at: new Date(entry.updatedAt).toISOString(),
            by: entry.updatedBy,
          });
        }
        lastSeq = seq;
      }
      if (page.entries.length < Math.min(500, limit + 1)) return { entries };
      if (scanned >= SCAN_BUDGET) return { entries, nextAfterSeq: lastSeq };
      after = page.entries[page.entries.length - 1][0];
    }
  }

  async prune(args: { keepLast: number; idempotencyKey?: string }, call: CallOptions): Promise<{ removed: number }> {
    if (!Number.isSafeInteger(args.keepLast) || args.keepLast < 0) {
      throw invalid('keepLast must be a whole number, 0 or more.', { keepLast: args.keepLast });
    }
    const thread = this.session.identity.thread;
    const { result } = await this.store.transact(async (tx) => {
      const stored = (await tx.get(this.seqKey(thread)))?.value;
      const last = stored === undefined ? 0 : decode(Counter, stored, 'history counter');
      const cut = last - args.keepLast;
      if (cut <= 0) return { removed: 0 };
      return { removed: await tx.deleteRange(this.range(thread).lo, this.entryKey(thread, cut + 1)) };
    }, { ...idempotent(this.session.identity, call, args) });
    return result;
  }
}
