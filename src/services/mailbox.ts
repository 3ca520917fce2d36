// Mail as stored: the message log's records, mailbox entries, acknowledged positions, and reading a recipient's mail.
import * as z from 'zod';
import type { KeyRange, Keys } from '../keyspace.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { decode } from './records.js';

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
export type MailRange = { range: KeyRange; key: (seq: number) => string };

/** Where a recipient's mail is: its mailbox, and what is kept for its agent name, thread and type until they arrive. */
export function mailRanges(k: Keys, { agent, thread, agentType }: Recipient): MailRange[] {
  const out = [{ range: k.mailboxRange(agent, thread), key: (seq: number) => k.mailbox(agent, thread, seq) }];
  const awaited = [...(agent !== undefined ? [`a.${agent}`] : []), `t.${thread}`, ...(agentType !== undefined ? [`y.${agentType}`] : [])];
  for (const a of awaited) out.push({ range: k.mailboxWaitRange(a), key: (seq: number) => k.mailboxWait(a, seq) });
  return out;
}

/** A recipient's acknowledged position (0: nothing acknowledged yet). */
export async function positionOf(store: VersionedStore, k: Keys, who: Recipient): Promise<number> {
  const entry = await store.get(k.inboxPosition(who.agent, who.thread));
  return entry === undefined ? 0 : decode(InboxPosition, entry.value, 'inbox position').seq;
}

/** The sequence numbers of a recipient's messages after `position`, oldest first (at most {@link UNREAD_CAP}). */
export async function pendingOf(store: VersionedStore, k: Keys, who: Recipient, position: number): Promise<number[]> {
  const pages = await Promise.all(
    mailRanges(k, who).map(({ range, key }) => store.list({ ...range, after: key(position), limit: UNREAD_CAP })),
  );
  const seqs = new Set<number>();
  for (const { entries } of pages) for (const [storage] of entries) seqs.add(k.messageSeq(storage));
  return [...seqs].sort((a, b) => a - b).slice(0, UNREAD_CAP);
}

/** How many messages a recipient has after its acknowledged position. */
export const unreadOf = async (store: VersionedStore, k: Keys, who: Recipient): Promise<number> =>
  (await pendingOf(store, k, who, await positionOf(store, k, who))).length;
