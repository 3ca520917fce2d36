// Messages between agents: one append-only log per namespace, a mailbox entry per recipient, and acknowledged positions.
import * as z from 'zod';
import { BlackboardError, afterApplied, invalid } from '../errors.js';
import { idempotent, type CallOptions } from '../context.js';
import { jsonBytes } from '../store/json-text.js';
import type { Json } from '../store/types.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { checkTimeout } from './arguments.js';
import { decode, encode } from './records.js';
import {
  InboxPosition,
  MessageRecord,
  agentMailRanges,
  lastMessageSeq,
  mailIn,
  mailRanges,
  messageView,
  pendingOf,
  positionOf,
  type MailRange,
  type Message,
  type Position,
} from './mailbox.js';
import { AGENT_MAILBOX } from '../keyspace.js';
import { holderId, type Holder } from './presence.js';
import { readSigns, type RosterTimes } from './roster.js';
import { mailboxesOf, noRecipient, parseTo, reachableSigns, recipientsOf } from './mail-address.js';
import { fitPage, fitPageFromEnd, mapLazily } from './page-fit.js';
import type { Session } from './session.js';

/** Largest message content, in UTF-8 bytes. */
export const MESSAGE_MAX_BYTES = 16 * 1024;
/** How many bytes of messages (as JSON) one inbox reply carries at most (its first message always comes). */
const PAGE_BYTES = 16 * 1024;
/** The rest of an inbox reply around its messages (`{"messages":[],"cursor":…,"unread":…,"timedOut":…}`), at most. */
const INBOX_FRAME_BYTES = 96;
export const INBOX_DEFAULT_LIMIT = 10;
export const INBOX_MAX_LIMIT = 100;
/** How long a caller's unread count is reused for the `_meta` of its other replies (a local send or ack renews it). */
const UNREAD_FRESH_MS = 1000;
/** How long a reply waits for the unread count (a few ms when the store is reachable). */
const HINT_WAIT_MS = 500;

export interface SendArgs {
  to: string;
  content: string;
  replyTo?: string;
  waitForRecipient?: boolean;
  idempotencyKey?: string;
}
export interface SendResult {
  messageId: string;
  revision: number;
  recipients: Holder[];
  /** the recipient the message is kept for until it arrives */
  awaiting?: string;
}
export interface InboxArgs {
  waitMs?: number;
  limit?: number;
  ack?: string;
}
export interface InboxResult {
  messages: Message[];
  cursor: string;
  unread: number;
  timedOut?: boolean;
}

/**
 * Per store, by namespace and holder: unread counts as last read in this process. A send through this process drops
 * its recipients' counts, an ack the caller's; a send through another process shows within {@link UNREAD_FRESH_MS}.
 */
const UNREAD = new WeakMap<VersionedStore, Map<string, { unread: number; at: number }>>();

const MESSAGE_ID_RE = /^m([1-9][0-9]{0,15})$/;

/**
 * Messages of one connection's caller. A send takes the namespace's next sequence number and writes the message
 * once, plus one mailbox entry per recipient (resolved from the roster at send time), all in one transaction: a
 * recipient's mail is exactly its mailbox, in sequence order, which is send order. An inbox reads its mailbox after
 * the caller's acknowledged position, which moves only on `ack`.
 */
export class MessageService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly times: RosterTimes & { retentionMs: number },
  ) {}

  private get keys() {
    return this.session.keys;
  }
  private holder(): Holder {
    const { agent, thread } = this.session.identity;
    return agent === undefined ? { thread } : { agent, thread };
  }

  async send(args: SendArgs, call: CallOptions): Promise<SendResult> {
    if (typeof args.content !== 'string') throw invalid('content must be text.', { path: 'content' });
    const bytes = Buffer.byteLength(args.content, 'utf8');
    if (bytes > MESSAGE_MAX_BYTES) {
      throw new BlackboardError(
        'VALUE_TOO_LARGE',
        `content is ${bytes} bytes, over the ${MESSAGE_MAX_BYTES}-byte limit of a message. Nothing was sent: send it shorter or in parts (or put it in a key with {tool:state_set} and send the key's name).`,
        { bytes, maxBytes: MESSAGE_MAX_BYTES },
      );
    }
    if (args.replyTo !== undefined && !MESSAGE_ID_RE.test(args.replyTo)) {
      throw invalid(
        `replyTo must be a message id such as "m12" (the id of a message {tool:inbox} returned), got "${args.replyTo.slice(0, 40)}".`,
        {
          path: 'replyTo',
        },
      );
    }
    const me = this.session.identity;
    const { kind, name } = parseTo(args.to);
    const { signs, whole } = await reachableSigns(this.store, this.keys, kind, name, this.times);
    const recipients = recipientsOf(signs, kind, name, me);
    const boxes = mailboxesOf(this.keys, recipients, kind);
    let awaited: string | undefined;
    let nobody: BlackboardError | undefined;
    if (recipients.length === 0) {
      if (!args.waitForRecipient || kind === 'all') {
        // the closest name is looked for on the whole roster
        const roster =
          whole || kind !== 'agent' ? signs : [...(await readSigns(this.store, this.keys, this.store.now(), this.times)).values()];
        nobody = noRecipient(
          args.to,
          kind,
          roster.flatMap((s) => s.agent ?? []),
        );
      } else awaited = `${kind === 'agent' ? 'a' : kind === 'thread' ? 't' : 'y'}.${name}`;
    }
    const ttlMs = this.times.retentionMs;
    const by = this.session.by;
    const { result, revision } = await this.store.transact(
      async (tx) => {
        // refused here, after the idempotency record is looked up: the retry of a message that was sent gets its first
        // answer even when its recipients have left the roster since, not "Nothing was sent"
        if (nobody) throw nobody;
        const counter = await tx.update(this.keys.messageCounter(), 'increment', 1, { by });
        const seq = decode(z.number().int().min(1), counter.value, 'message counter');
        const keys = [this.keys.message(seq), ...boxes.map((box) => box(seq))];
        await tx.prefetch(awaited !== undefined ? [...keys, this.keys.mailboxWait(awaited, seq)] : keys); // one read for all
        const record: MessageRecord = {
          id: `m${seq}`,
          seq,
          from: by,
          fromThread: me.thread,
          ...(me.agentType !== undefined ? { fromType: me.agentType } : {}),
          to: args.to,
          content: args.content,
          sentAt: tx.now,
          ...(args.replyTo !== undefined ? { replyTo: args.replyTo } : {}),
          recipients,
          ...(awaited !== undefined ? { awaited } : {}),
        };
        await tx.set(this.keys.message(seq), encode(record), { by, ifVersion: 0, ttlMs });
        for (const box of boxes) await tx.set(box(seq), { seq }, { by, ttlMs });
        if (awaited !== undefined) await tx.set(this.keys.mailboxWait(awaited, seq), { seq }, { by, ttlMs });
        return { messageId: record.id, recipients, ...(awaited !== undefined ? { awaiting: awaited.slice(2) } : {}) };
      },
      // the counter comes with the transaction's first round trip (its lock's, on Postgres)
      { ...idempotent(me, call, args), prefetch: [this.keys.messageCounter()] },
    );
    const cache = this.cache();
    if (awaited !== undefined || result.recipients.some((r) => r.agent !== undefined))
      cache.clear(); // any thread of theirs
    else for (const r of result.recipients) cache.delete(this.cacheId(r));
    return { ...result, revision };
  }

  private ranges(): MailRange[] {
    return mailRanges(this.keys, this.session.identity);
  }

  /** The caller's acknowledged positions (0: nothing acknowledged yet). */
  position(): Promise<Position> {
    return positionOf(this.store, this.keys, this.session.identity);
  }

  private pending(position: Position): Promise<number[]> {
    return pendingOf(this.store, this.keys, this.session.identity, position);
  }

  /** How many messages the caller has after its acknowledged position. */
  async unread(): Promise<number> {
    return (await this.pending(await this.position())).length;
  }

  /**
   * The caller's unread count for the `_meta` of its replies, reused for a second unless a send or ack in this
   * process happened since (a send through another process shows within that second).
   */
  async unreadHint(): Promise<number> {
    const hit = this.cache().get(this.cacheId());
    if (hit && Date.now() - hit.at < UNREAD_FRESH_MS) return hit.unread;
    const reading = this.unread().then((unread) => {
      this.remember(unread);
      return unread;
    });
    // A reply waits for the count only briefly: on a broken link (a read can take a call's whole time) it goes
    // without the hint, or with the last one known, and the next call catches up.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<number>((resolve) => {
      timer = setTimeout(() => resolve(hit?.unread ?? 0), HINT_WAIT_MS);
    });
    try {
      return await Promise.race([reading, late]);
    } finally {
      clearTimeout(timer);
      reading.catch(() => {});
    }
  }

  private cache(): Map<string, { unread: number; at: number }> {
    let cache = UNREAD.get(this.store);
    if (!cache) {
      cache = new Map();
      UNREAD.set(this.store, cache);
    }
    return cache;
  }
  private cacheId(holder: Holder = this.holder()): string {
    return `${this.session.identity.namespace ?? ''}\u0000${holderId(holder)}`;
  }
  /** Keeps the caller's unread count as just read, for {@link unreadHint}. */
  private remember(unread: number): void {
    const cache = this.cache();
    if (cache.size > 10_000) cache.clear();
    cache.set(this.cacheId(), { unread, at: Date.now() });
  }

  /**
   * Moves the acknowledged positions (the thread's, and a named agent's over all its threads) to `ack`, never back;
   * INVALID_ARGUMENT for a cursor this namespace never gave.
   */
  private async acknowledge(ack: string): Promise<Position> {
    const seq = /^(0|[1-9][0-9]{0,15})$/.test(ack) ? Number(ack) : Number.NaN;
    if (!Number.isSafeInteger(seq)) {
      throw invalid('ack must be a cursor from an earlier {tool:inbox} reply, passed back as it was.', { path: 'ack' });
    }
    const { agent, thread } = this.session.identity;
    const keys = [this.keys.inboxPosition(agent, thread), ...(agent !== undefined ? [this.keys.inboxPosition(agent, AGENT_MAILBOX)] : [])];
    // The counter only grows, so it is read before the transaction: a send committing meanwhile cannot make a cursor
    // valid that was not, and an ack does not conflict with every send (on Redis it would re-run on each of them).
    if (seq > (await lastMessageSeq(this.store, this.keys))) {
      throw invalid(`ack ${ack} is past the last message sent here: pass a cursor from an earlier {tool:inbox} reply.`, { path: 'ack' });
    }
    const { result } = await this.store.transact(
      async (tx) => {
        const moved: number[] = [];
        for (const key of keys) {
          const current = await tx.get(key);
          const at = current === undefined ? 0 : decode(InboxPosition, current.value, 'inbox position').seq;
          if (seq > at) await tx.set(key, { seq } as Json, { by: this.session.by, ttlMs: this.times.retentionMs });
          moved.push(Math.max(seq, at));
        }
        return { thread: moved[0], agent: Math.max(...moved) };
      },
      { prefetch: keys },
    );
    // a named agent's position is also that of its other threads: their counts change with it
    const cache = this.cache();
    const mine = this.cacheId(agent !== undefined ? { agent, thread: '' } : undefined);
    for (const id of cache.keys()) if (agent !== undefined ? id.startsWith(mine) : id === mine) cache.delete(id);
    return result;
  }

  /** What the inbox resource of `agent` shows: its newest messages (any thread), oldest first, and the newest's number. */
  async recentFor(agent: string, n = 20): Promise<{ agent: string; messages: Message[]; last: number }> {
    const seqs = (await mailIn(this.store, this.keys, await agentMailRanges(this.store, this.keys, agent, this.times))).slice(-n);
    const entries = await Promise.all(seqs.map((seq) => this.store.get(this.keys.message(seq))));
    const all = entries.flatMap((e) => (e === undefined ? [] : [messageView(decode(MessageRecord, e.value, 'message'))]));
    // the newest that fit in a page's bytes with the reply around them (the newest always comes), oldest first
    const { kept: messages } = fitPageFromEnd(all, PAGE_BYTES, (message) => jsonBytes(message) + 1, {
      used: jsonBytes({ agent, messages: [] }),
    });
    return { agent, messages, last: seqs.at(-1) ?? 0 };
  }

  /** Waits until `agent` (any thread) has a message numbered above `after`; the newest number, or `undefined` at the deadline. */
  async waitForMail(agent: string, after: number, waitMs: number, signal?: AbortSignal): Promise<number | undefined> {
    const ranges = await agentMailRanges(this.store, this.keys, agent, this.times);
    const { value, timedOut } = await this.store.waitFor(
      (wake) => this.store.subscribeRanges(ranges, wake),
      async () => {
        const last = (await mailIn(this.store, this.keys, ranges)).at(-1) ?? 0;
        return { ready: last > after, value: last };
      },
      { timeoutMs: waitMs, signal },
    );
    return timedOut ? undefined : value;
  }

  /**
   * The caller's messages after its acknowledged position (after moving it to `ack`), oldest first, waiting up to
   * `waitMs` when there are none. Nothing is consumed by reading: only `ack` moves the position.
   */
  async inbox(args: InboxArgs, signal?: AbortSignal): Promise<InboxResult> {
    const limit = args.limit ?? INBOX_DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > INBOX_MAX_LIMIT) {
      throw invalid(`limit must be a whole number from 1 to ${INBOX_MAX_LIMIT}.`, { limit, path: 'limit' });
    }
    const waitMs = checkTimeout(args.waitMs, 0, 'waitMs');
    if (args.ack === undefined) return this.read(await this.position(), limit, waitMs, signal);
    const position = await this.acknowledge(args.ack);
    try {
      return await this.read(position, limit, waitMs, signal);
    } catch (error) {
      // the ack is committed: a failure to read after it must not say that nothing was changed
      throw afterApplied(error, 'read the inbox', `the acknowledged position moved to ${position.thread}`);
    }
  }

  private async read(position: Position, limit: number, waitMs: number, signal?: AbortSignal): Promise<InboxResult> {
    const attempt = async (): Promise<{ ready: boolean; value: number[] }> => {
      const seqs = await this.pending(position);
      return { ready: seqs.length > 0, value: seqs };
    };
    let seqs: number[];
    let timedOut: boolean | undefined;
    if (waitMs === 0) {
      seqs = (await attempt()).value;
      if (seqs.length === 0) timedOut = true; // as a wait that ends empty says, waitMs 0 included
    } else {
      const subscribe = (wake: () => void): (() => void) =>
        this.store.subscribeRanges(
          this.ranges().map(({ range }) => range),
          wake,
        );
      ({ value: seqs, timedOut } = await this.store.waitFor(subscribe, attempt, { timeoutMs: waitMs, signal }));
      if (!timedOut) timedOut = undefined;
    }
    const records = await Promise.all(seqs.slice(0, limit).map((seq) => this.store.get(this.keys.message(seq))));
    // A page ends before the message that would take it over PAGE_BYTES; its first message always comes. One expired
    // with the retention is not shown, and the cursor passes it as it passes the messages before the page's end.
    const present = records.flatMap((entry, at) => (entry === undefined ? [] : [{ at, entry }]));
    const views = mapLazily(present, ({ at, entry }) => ({ at, view: messageView(decode(MessageRecord, entry.value, 'message')) }));
    const page = fitPage(views, PAGE_BYTES, ({ view }) => jsonBytes(view) + 1, { used: INBOX_FRAME_BYTES });
    const messages = page.kept.map(({ view }) => view);
    const end = page.stopped ? page.next.at : records.length;
    const cursor = end > 0 ? seqs[end - 1] : position.thread;
    this.remember(seqs.length); // the reply's own unread count serves the _meta of this call and the next second's
    return { messages, cursor: String(cursor), unread: seqs.length, ...(timedOut ? { timedOut } : {}) };
  }
}
