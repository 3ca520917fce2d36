// The team tools: team_list, message_send, inbox.
import * as z from 'zod';
import { INBOX_MAX_LIMIT } from '../services/messages.js';
import type { MessageService } from '../services/messages.js';
import type { TeamService } from '../services/team.js';
import { waitOf } from './bounds.js';
import { counter, cursor, idempotencyKey, isoTime, waitMs } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

const holder = z.object({ agent: z.string().optional(), thread: z.string() });

/** Registers the team family: the roster the server keeps, and durable messages between agents. */
export function registerTeamTools(host: ToolHost, team: TeamService, messages: MessageService): void {
  defineTool(
    host,
    'team_list',
    {
      title: 'List the team',
      description:
        'Who is on the team: every agent that called here lately, most recently seen first, with status (active, idle, gone), steps held and unread. Message one with {tool:message_send}. Returns agents, nextCursor.',
      input: z.object({ cursor }).strict(),
      output: z.object({
        agents: z.array(
          z.object({
            agent: z.string().optional(),
            agentType: z.string().optional(),
            thread: z.string(),
            client: z.string().optional(),
            lastSeen: isoTime,
            status: z.enum(['active', 'idle', 'gone']),
            holding: z.array(z.object({ planId: z.string(), stepId: z.string() })),
            unread: counter,
          }),
        ),
        nextCursor: z.string().optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) => team.list(args),
  );
  defineTool(
    host,
    'message_send',
    {
      title: 'Send a message',
      description:
        'Send a durable message to an agent, agentType:T, thread:ID or all; it waits in their {tool:inbox} until acknowledged. For shared state use {tool:state_set}. Returns messageId, recipients.',
      input: z
        .object({
          to: z.string().describe('Agent name, agentType:T, thread:ID or all'),
          content: z.string().describe('Text, at most 16 KiB'),
          replyTo: z.string().optional().describe('Message id answered'),
          waitForRecipient: z.boolean().optional().describe('Keep it for an agent not here yet'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ messageId: z.string(), revision: counter, recipients: z.array(holder), awaiting: z.string().optional() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, _extra, call) => messages.send(args, call),
  );
  defineTool(
    host,
    'inbox',
    {
      title: 'Read your messages',
      description: `Your messages after your acknowledged position, oldest first; pass ack: cursor once handled (unacked ones come again). Waits waitMs when empty, ≤50 s without progress token. Returns messages, cursor, unread.`,
      input: z
        .object({
          waitMs,
          limit: z.number().int().min(1).max(INBOX_MAX_LIMIT).optional().describe('Default 10'),
          ack: z.string().optional().describe('A cursor returned earlier'),
        })
        .strict(),
      output: z.object({
        messages: z.array(
          z.object({
            id: z.string(),
            from: z.string(),
            fromThread: z.string(),
            to: z.string(),
            content: z.string(),
            sentAt: isoTime,
            replyTo: z.string().optional(),
          }),
        ),
        cursor: z.string(),
        unread: counter,
        timedOut: z.boolean().optional(),
      }),
      // it moves the caller's own acknowledged position only
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    },
    (args, extra) =>
      withProgress(extra, host.progressIntervalMs, 'waiting for messages', () =>
        messages.inbox({ ...args, waitMs: waitOf(extra, args.waitMs) }, extra.signal),
      ),
  );
}
