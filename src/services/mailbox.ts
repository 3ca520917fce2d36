// Mail as stored: the message log's records, mailbox entries, acknowledged positions, and reading a recipient's mail.
import * as z from 'zod';
import { AGENT_MAILBOX, type KeyRange, type Keys } from '../keyspace.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { decode } from './records.js';
import { readSigns, readSignsBy, type RosterTimes } from './roster.js';

/** Unread counts stop at this. */
export const UNREAD_CAP = 1000;

/** A message as stored in the log: who sent it, to whom it was addressed, and the recipients it was resolved to. */
export const MessageRecord = z.object({
  id: z.string(),
  seq: z.number().int().min(1),
  from: z.string(),
  fromThread: z.string(),
  fromType: z.string().optional(),
  to: z.string(),
  content: z.string(),
  sentAt: z.number(),
  replyTo: z.string().optional(),
  recipients: z.array(z.object({ agent: z.string().optional(), thread: z.string() })),
  /** kept for a recipient not on the roster yet: `a.AGENT`, `t.THREAD` or `y.TYPE` */
  awaited: z.string().optional(),
});
export type MessageRecord = z.infer<typeof MessageRecord>;
/** A mailbox entry (and an awaited recipient's entry): the message's sequence number. */
export const MailboxEntry = z.object({ seq: z.number().int().min(1) });
/** A recipient's acknowledged position: every message up to `seq` is acknowledged. */
export const InboxPosition = z.object({ seq: z.number().int().min(0) });

/** A message as an inbox shows it. */
export interface Message {
  id: string;
  from: string;
  fromThread: string;
  to: string;
  content: string;
  sentAt: string;
  replyTo?: string;
}
export const messageView = (m: MessageRecord): Message => ({
  id: m.id,
  from: m.from,
  fromThread: m.fromThread,
  to: m.to,
  content: m.content,
  sentAt: new Date(m.sentAt).toISOString(),
  ...(m.replyTo !== undefined ? { replyTo: m.replyTo } : {}),
});

/** Who a mailbox is for: an agent name (or none) in a thread, of a type. */
export interface Recipient {
  agent?: string;
  thread: string;
  agentType?: string;
}
/**
 * A range of mail a recipient reads: `thread` mail (addressed to its thread, or to a recipient with no agent name) is
 * read after the thread's acknowledged position; `agent` mail (addressed to a named agent by name, type or `all`) is
 * the agent's whatever thread it reads in, and is read after the agent's position over all its threads.
 */
export type MailRange = { range: KeyRange; key: (seq: number) => string; level: 'thread' | 'agent'; thread?: string };

/**
 * Where a recipient's mail is: its thread's mailbox, its agent's own mailbox, and what is kept for its agent name,
 * thread and type until they arrive.
 */
export function mailRanges(k: Keys, { agent, thread, agentType }: Recipient): MailRange[] {
  const named = agent !== undefined;
  const out: MailRange[] = [
    { range: k.mailboxRange(agent, thread), key: (seq) => k.mailbox(agent, thread, seq), level: 'thread', thread },
    kept(k, `t.${thread}`, 'thread'),
  ];
  if (named) out.push({ range: k.mailboxRange(agent, AGENT_MAILBOX), key: (seq) => k.mailbox(agent, AGENT_MAILBOX, seq), level: 'agent' });
  if (named) out.push(kept(k, `a.${agent}`, 'agent'));
  if (agentType !== undefined) out.push(kept(k, `y.${agentType}`, named ? 'agent' : 'thread'));
  return out;
}

const kept = (k: Keys, awaited: string, level: MailRange['level']): MailRange => ({
  range: k.mailboxWaitRange(awaited),
  key: (seq) => k.mailboxWait(awaited, seq),
  level,
});

/** A recipient's acknowledged positions: its thread's, and its agent's over all its threads (0: nothing yet). */
export interface Position {
  thread: number;
  agent: number;
}

/** A recipient's acknowledged positions. */
export async function positionOf(store: VersionedStore, k: Keys, who: Recipient): Promise<Position> {
  const read = async (thread: string): Promise<number> => {
    const entry = await store.get(k.inboxPosition(who.agent, thread));
    return entry === undefined ? 0 : decode(InboxPosition, entry.value, 'inbox position').seq;
  };
  const [thread, agent] = await Promise.all([read(who.thread), who.agent !== undefined ? read(AGENT_MAILBOX) : 0]);
  return { thread, agent: Math.max(thread, agent) };
}

/** The number of the last message sent in the namespace (0: none yet). */
export async function lastMessageSeq(store: VersionedStore, k: Keys): Promise<number> {
  const last = (await store.get(k.messageCounter()))?.value;
  return typeof last === 'number' ? last : 0;
}

/**
 * The sequence numbers of a recipient's messages after its positions, oldest first (at most {@link UNREAD_CAP}), up
 * to the last message sent before the read. Its mailboxes are read apart, so a send committing meanwhile may show in
 * one and not yet in another: the counter is read first (sends commit in number order, each with all its entries),
 * and a message numbered past it waits for the next read, so that no page, and no ack of its cursor, passes over a
 * message the reader has yet to see.
 */
export async function pendingOf(store: VersionedStore, k: Keys, who: Recipient, position: Position): Promise<number[]> {
  const ranges = mailRanges(k, who);
  const last = await lastMessageSeq(store, k);
  const pages = await Promise.all(
    ranges.map(({ range, key, level }) => store.list({ ...range, after: key(position[level]), limit: UNREAD_CAP })),
  );
  const seqs = new Set<number>();
  for (const [i, { entries }] of pages.entries()) {
    const { thread } = ranges[i];
    for (const [storage] of entries) {
      const seq = k.messageSeq(storage);
      if (seq <= last && (thread === undefined || k.isMailboxOf(storage, thread))) seqs.add(seq);
    }
  }
  return [...seqs].sort((a, b) => a - b).slice(0, UNREAD_CAP);
}

/** How many messages a recipient has after its acknowledged positions. */
export const unreadOf = async (store: VersionedStore, k: Keys, who: Recipient): Promise<number> =>
  (await pendingOf(store, k, who, await positionOf(store, k, who))).length;

/**
 * Where an agent's mail in any of its threads is, as its inbox resource shows it: its mailboxes, what is kept for its
 * name, and what is kept for the threads and types it is on the roster with.
 */
export async function agentMailRanges(store: VersionedStore, k: Keys, agent: string, times: RosterTimes): Promise<KeyRange[]> {
  const awaited = new Set([`a.${agent}`]);
  const now = store.now();
  for (const s of (await readSignsBy(store, k, 'agent', agent, now, times)) ?? (await readSigns(store, k, now, times)).values()) {
    if (s.agent !== agent) continue;
    awaited.add(`t.${s.thread}`);
    if (s.agentType !== undefined) awaited.add(`y.${s.agentType}`);
  }
  return [k.mailboxRange(agent), ...[...awaited].map((a) => k.mailboxWaitRange(a))];
}

/** The sequence numbers in `ranges` (an agent's mail, {@link agentMailRanges}), oldest first, at most {@link UNREAD_CAP} of the newest. */
export async function mailIn(store: VersionedStore, k: Keys, ranges: KeyRange[]): Promise<number[]> {
  const pages = await Promise.all(ranges.map((range) => store.list({ ...range, limit: 10 * UNREAD_CAP })));
  const seqs = new Set(pages.flatMap(({ entries }) => entries.map(([key]) => k.messageSeq(key))));
  return [...seqs].sort((a, b) => a - b).slice(-UNREAD_CAP);
}
