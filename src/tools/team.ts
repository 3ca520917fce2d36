// The team tools: team_list, message_send, inbox.
import * as z from 'zod';
import { INBOX_MAX_LIMIT } from '../services/messages.js';
import type { MessageService } from '../services/messages.js';
import type { TeamService } from '../services/team.js';
import { waitOf } from './bounds.js';
import { counter, cursor, idempotencyKey, isoTime, waitMs } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

/** Registers the team family: the roster the server keeps, and durable messages between agents. */
export function registerTeamTools(host: ToolHost, team: TeamService, messages: MessageService): void {
  defineTool(
    host,
    'team_list',
    () => ({
      title: 'Team',
      description: 'Who is here (status, held steps, unread), newest first; message: {tool:message_send}. Returns agents, nextCursor.',
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
    }),
    (args) => team.list(args),
  );
  defineTool(
    host,
    'message_send',
    () => ({
      title: 'Send message',
      description: 'Message an agent, agentType:T, thread:ID or all; kept till acked in their {tool:inbox}. Returns messageId, recipients.',
      input: z
        .object({
          to: z.string(),
          content: z.string(),
          replyTo: z.string().optional(),
          waitForRecipient: z.boolean().optional(),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ messageId: z.string(), revision: counter, recipients: counter, awaiting: z.string().optional() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }),
    async (args, _extra, call) => {
      const sent = await messages.send(args, call);
      return { ...sent, recipients: sent.recipients.length };
    },
  );
  defineTool(
    host,
    'inbox',
    () => ({
      title: 'Inbox',
      description:
        'Your unacked messages, oldest first; ack: cursor when done. Waits waitMs, ≤50 s without progress token. Returns messages, cursor, unread.',
      input: z
        .object({
          waitMs,
          limit: z.number().int().min(1).max(INBOX_MAX_LIMIT).optional(),
          ack: z.string().optional(),
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
    }),
    (args, extra) =>
      withProgress(extra, host.progressIntervalMs, 'waiting for messages', () =>
        messages.inbox({ ...args, waitMs: waitOf(extra, args.waitMs) }, extra.signal),
      ),
  );
}
