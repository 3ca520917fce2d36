// The finalizer tools: final_answer_set, final_answer_get.
import * as z from 'zod';
import type { FinalizerService } from '../services/finalizer.js';
import { WATCH_MAX_MS } from '../services/arguments.js';
import { idempotencyKey, isoTime, json, jsonValue, threadArg } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

const answer = z.object({
  content: z.string(),
  metadata: json(jsonValue).optional(),
  thread: z.string(),
  run: z.string(),
  setAt: isoTime,
  setBy: z.string(),
});

/** Registers the finalizer family: final_answer_set, final_answer_get. */
export function registerFinalizerTools(host: ToolHost, finalizer: FinalizerService): void {
  defineTool(
    host,
    'final_answer_set',
    {
      title: 'Give the final answer',
      description: 'Set this run\'s final answer, once (MULTIPLE_FINAL_ANSWERS: already set; do not retry).',
      input: z.object({ content: z.string().describe('The answer'), metadata: json(jsonValue).optional().describe('Any JSON'), idempotencyKey }).strict(),
      output: z.object({ answer }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, _extra, call) => finalizer.set(args, call),
  );
  defineTool(
    host,
    'final_answer_get',
    {
      title: 'Read (or wait for) a final answer',
      description: 'This run\'s or a delegated thread\'s final answer; waitMs waits for it.',
      input: z
        .object({ thread: threadArg, waitMs: z.number().int().min(0).max(WATCH_MAX_MS).optional().describe('Wait up to this long') })
        .strict(),
      output: z.object({ isSet: z.boolean(), answer: answer.optional(), timedOut: z.boolean().optional() }),
      annotations: { readOnlyHint: true },
    },
    (args, extra) => withProgress(extra, host.progressIntervalMs, 'waiting for a final answer', () => finalizer.get(args, extra.signal)),
  );
}
