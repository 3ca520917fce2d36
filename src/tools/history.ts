// The history tools: history_append, history_list, history_prune.
import * as z from 'zod';
import { HISTORY_MAX_LIMIT, type HistoryService } from '../services/history.js';
import { READ_DEFAULT_BYTES, counter, cursor, idempotencyKey, isoTime, json, jsonValue, threadArg } from './common.js';
import { defineTool, type ToolHost } from './define.js';
import { boundValue, cutJsonText } from './bounds.js';
import { jsonBytes } from '../store/json-text.js';
import type { Json } from '../store/types.js';

/** history_list's default page: a page of long events stays a modest read. */
export const LIST_DEFAULT = 20;

/**
 * An event within one read's size (only an event that fills a page alone can be over it): its content cut to a
 * preview ending in "…", and its data, when large, a preview of its JSON text.
 */
function eventWithin<E extends { content: string; data?: Json }>(event: E): E {
  if (jsonBytes(event) <= READ_DEFAULT_BYTES) return event;
  const content = cutJsonText(event.content, (READ_DEFAULT_BYTES * 3) / 4);
  return { ...event, content, ...(event.data !== undefined ? { data: boundValue(event.data, READ_DEFAULT_BYTES / 8).value } : {}) };
}

/** Registers the history family: history_append, history_list, history_prune. */
export function registerHistoryTools(host: ToolHost, history: HistoryService): void {
  defineTool(
    host,
    'history_append',
    () => ({
      title: 'Record an event',
      description: "Log an event in this thread's history for others; private: {tool:scratchpad_write}. Returns seq.",
      input: z
        .object({
          kind: z.string().describe('e.g. decision, tool_call'),
          content: z.string(),
          data: json(jsonValue).optional(),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ seq: counter }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }),
    (args, _extra, call) => history.append(args, call),
  );
  defineTool(
    host,
    'history_list',
    () => ({
      title: 'Read the history',
      description: "A thread's history (yours, a child's), newest first. Returns entries, nextCursor (asc: nextAfterSeq).",
      input: z
        .object({
          thread: threadArg,
          afterSeq: z.number().int().min(0).optional(),
          limit: z.number().int().min(1).max(HISTORY_MAX_LIMIT).optional().describe(`Default ${LIST_DEFAULT}`),
          kind: z.string().optional(),
          order: z.enum(['desc', 'asc']).optional(),
          cursor,
        })
        .strict(),
      output: z.object({
        entries: z.array(
          z.object({ seq: counter, kind: z.string(), content: z.string(), data: json(jsonValue).optional(), at: isoTime, by: z.string() }),
        ),
        nextCursor: z.string().optional(),
        nextAfterSeq: counter.optional(),
      }),
      annotations: { readOnlyHint: true },
    }),
    async (args) => {
      const page = await history.list({ ...args, limit: args.limit ?? LIST_DEFAULT, maxBytes: READ_DEFAULT_BYTES });
      return { ...page, entries: page.entries.map(eventWithin) };
    },
  );
  defineTool(
    host,
    'history_prune',
    () => ({
      title: 'Prune the history',
      description: 'Keep only the newest keepLast events of your history. Returns removed.',
      input: z.object({ keepLast: z.number().int().min(0), idempotencyKey }).strict(),
      output: z.object({ removed: counter }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    }),
    (args, _extra, call) => history.prune(args, call),
  );
}
