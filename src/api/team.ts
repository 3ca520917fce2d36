// Public types of the team: the roster the server keeps, and messages between agents.
import type { CallOptions } from './options.js';

/** One agent (an agent name in a thread) on the roster. */
export interface TeamMember {
  agent?: string;
  agentType?: string;
  thread: string;
  /** the MCP client's name, when it gave one */
  client?: string;
  /** ISO time of its last call */
  lastSeen: string;
  /** `active`: a call within the claim lease; `idle` after that; `gone`: its stdio connection closed */
  status: 'active' | 'idle' | 'gone';
  /** the plan steps it holds */
  holding: Array<{ planId: string; stepId: string }>;
  /** its messages not acknowledged yet */
  unread: number;
}
/** The roster: `team_list`. */
export interface TeamApi {
  /** `team_list`: most recently seen first, pages of 50 */
  list: (args?: { cursor?: string }) => Promise<{ agents: TeamMember[]; nextCursor?: string }>;
}

/** A message as an inbox shows it. */
export interface Message {
  /** `m` and its sequence number: unique in the namespace */
  id: string;
  /** the sender's agent name (`anonymous` when it has none), stamped by the server */
  from: string;
  fromThread: string;
  /** as the sender addressed it: an agent name, `agentType:T`, `thread:ID` or `all` */
  to: string;
  content: string;
  sentAt: string;
  replyTo?: string;
}
/** `message_send`'s arguments. */
export interface SendArgs {
  /** an agent name, `agentType:T`, `thread:ID` or `all` (everyone on the roster but the sender) */
  to: string;
  /** text, at most 16 KiB */
  content: string;
  /** the id of the message this answers */
  replyTo?: string;
  /** keep the message for a recipient that is not on the roster yet (else NOT_FOUND) */
  waitForRecipient?: boolean;
  idempotencyKey?: string;
}
/** What a send did: the message's id, the revision it committed at, whom it reached. */
export interface SendResult {
  messageId: string;
  revision: number;
  recipients: Array<{ agent?: string; thread: string }>;
  /** the recipient it is kept for until it arrives */
  awaiting?: string;
}
/** `inbox` as an iterator: how long each wait lasts and how many messages a page holds. */
export interface InboxArgs {
  /** each wait for new mail, in ms (default 25000) */
  waitMs?: number;
  /** messages per read (default 10) */
  limit?: number;
}
/** One read of `inbox`: `ack: cursor` (from an earlier read) acknowledges everything up to it first. */
export interface InboxPage {
  messages: Message[];
  cursor: string;
  unread: number;
  /** true when the read ended with no message (`waitMs: 0` included) */
  timedOut?: boolean;
}
/** Reading the inbox page by page. */
export interface InboxReadApi {
  read: (args?: InboxArgs & { ack?: string }, options?: CallOptions) => Promise<InboxPage>;
}
