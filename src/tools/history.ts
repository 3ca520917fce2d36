// The history tools: history_append, history_list, history_prune.
import * as z from 'zod';
import { HISTORY_MAX_LIMIT, type HistoryService } from '../services/history.js';
import { counter, idempotencyKey, isoTime, json, jsonValue } from './common.js';
import { defineTool, type ToolHost } from './define.js';

/** history_list's default page: a page of long events stays a modest read. */
export const LIST_DEFAULT = 20;

/** Registers the history family: history_append, history_list, history_prune. */
export function registerHistoryTools(host: ToolHost, history: HistoryService): void {
  defineTool(
    host,
    'history_append',
    {
      title: 'Record an event',
      description: 'Append an event to this thread\'s history. Returns its sequence number.',
      input: z
        .object({ kind: z.string().describe('e.g. decision, tool_call'), content: z.string().describe('What happened'), data: json(jsonValue).optional().describe('Any JSON'), idempotencyKey })
        .strict(),
      output: z.object({ seq: counter }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, _extra, call) => history.append(args, call),
  );
  defineTool(
    host,
    'history_list',
    {
      title: 'Read the history',
      description: 'This thread\'s events in order. Pass nextAfterSeq back as afterSeq.',
      input: z
        .object({
          afterSeq: z.number().int().min(0).optional().describe('Events after this seq'),
          limit: z.number().int().min(1).max(HISTORY_MAX_LIMIT).optional().describe(`Default ${LIST_DEFAULT}`),
          kind: z.string().optional().describe('Only this kind'),
        })
        .strict(),
      output: z.object({
        entries: z.array(z.object({ seq: counter, kind: z.string(), content: z.string(), data: json(jsonValue).optional(), at: isoTime, by: z.string() })),
        nextAfterSeq: counter.optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) => history.list({ ...args, limit: args.limit ?? LIST_DEFAULT }),
  );
  defineTool(
    host,
    'history_prune',
    {
      title: 'Prune the history',
      description: 'Delete all but the last keepLast events of this thread\'s history.',
      input: z.object({ keepLast: z.number().int().min(0).describe('Events to keep'), idempotencyKey }).strict(),
      output: z.object({ removed: counter }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args, _extra, call) => history.prune(args, call),
  );
}
