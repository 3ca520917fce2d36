import * as z from 'zod';
import { HISTORY_MAX_LIMIT, type HistoryService } from '../services/history.js';
import { idempotencyKey, isoTime, json, jsonValue } from './common.js';
import { defineTool, type ToolHost } from './define.js';

/** Registers the history family: history_append, history_list, history_prune. */
export function registerHistoryTools(host: ToolHost, history: HistoryService): void {
  defineTool(
    host,
    'history_append',
    {
      title: 'Record an event',
      description: 'Append an event to this thread\'s history (kind e.g. "tool_call", "decision", "user_message"). Returns its sequence number.',
      input: z.object({ kind: z.string(), content: z.string(), data: json(jsonValue).optional(), idempotencyKey }).strict(),
      output: z.object({ seq: z.number().int() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args) => history.append(args),
  );
  defineTool(
    host,
    'history_list',
    {
      title: 'Read the history',
      description: `Read this thread's events in order, after afterSeq, up to limit (default 50, max ${HISTORY_MAX_LIMIT}), optionally of one kind. Pass nextAfterSeq as afterSeq for more.`,
      input: z
        .object({ afterSeq: z.number().int().optional(), limit: z.number().int().optional(), kind: z.string().optional() })
        .strict(),
      output: z.object({
        entries: z.array(
          z.object({ seq: z.number().int(), kind: z.string(), content: z.string(), data: json(jsonValue).optional(), at: isoTime, by: z.string() }),
        ),
        nextAfterSeq: z.number().int().optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) => history.list(args),
  );
  defineTool(
    host,
    'history_prune',
    {
      title: 'Prune the history',
      description: 'Delete all but the last keepLast events of this thread\'s history. Sequence numbers are never reused.',
      input: z.object({ keepLast: z.number().int(), idempotencyKey }).strict(),
      output: z.object({ removed: z.number().int() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args) => history.prune(args),
  );
}
