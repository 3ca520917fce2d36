// The finalizer tools: final_answer_set, final_answer_get.
import * as z from 'zod';
import { BlackboardError } from '../errors.js';
import type { FinalAnswer, FinalizerService } from '../services/finalizer.js';
import type { Json } from '../store/types.js';
import { boundValue, cutUtf8, waitOf } from './bounds.js';
import { READ_DEFAULT_BYTES, bounded, idempotencyKey, isoTime, json, jsonValue, maxBytes, threadArg, waitMs } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

const answer = z.object({
  content: z.string(),
  metadata: json(jsonValue).optional(),
  thread: z.string(),
  run: z.string(),
  setAt: isoTime,
  setBy: z.string(),
});

/** metadata larger than this comes back as a preview of its JSON text */
const METADATA_BYTES = 2048;

/** Registers the finalizer family: final_answer_set, final_answer_get. */
export function registerFinalizerTools(host: ToolHost, finalizer: FinalizerService): void {
  defineTool(
    host,
    'final_answer_set',
    () => ({
      title: 'Give the final answer',
      description:
        "Set this run's final answer, once; the delegator reads it: {tool:final_answer_get}. Returns it; MULTIPLE_FINAL_ANSWERS: stop.",
      input: z.object({ content: z.string(), metadata: json(jsonValue).optional(), idempotencyKey }).strict(),
      output: z.object({ answer }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }),
    async (args, _extra, call) => {
      try {
        return { answer: boundAnswer((await finalizer.set(args, call)).answer) };
      } catch (error) {
        // The first answer comes back with the refusal, within a read's size like any reply.
        if (error instanceof BlackboardError && error.code === 'MULTIPLE_FINAL_ANSWERS' && error.details?.answer !== undefined) {
          const answer = boundAnswer(error.details.answer as FinalAnswer, READ_DEFAULT_BYTES - 1024);
          throw new BlackboardError(error.code, error.message, { ...error.details, answer });
        }
        throw error;
      }
    },
  );
  defineTool(
    host,
    'final_answer_get',
    () => ({
      title: 'Read (or wait for) a final answer',
      description: "Your or a child's final answer; waits waitMs, ≤50 s without progress token. Returns isSet, answer, timedOut.",
      input: z.object({ thread: threadArg, waitMs, maxBytes }).strict(),
      output: z.object({ isSet: z.boolean(), answer: answer.extend(bounded).optional(), timedOut: z.boolean().optional() }),
      annotations: { readOnlyHint: true },
    }),
    async (args, extra) => {
      const got = await withProgress(extra, host.progressIntervalMs, 'waiting for a final answer', () =>
        finalizer.get({ thread: args.thread, waitMs: waitOf(extra, args.waitMs) }, extra.signal),
      );
      return got.answer ? { ...got, answer: boundAnswer(got.answer, args.maxBytes) } : got;
    },
  );
}

/**
 * An answer within `maxBytes` (its set reply and a second set's refusal too): metadata over 2 KiB as a preview of its
 * JSON, the content in what is left.
 */
function boundAnswer(answer: FinalAnswer, maxBytes = READ_DEFAULT_BYTES): FinalAnswer & { bytes?: number; truncated?: boolean } {
  let metadata: Json | undefined = answer.metadata;
  let truncated = false;
  let metadataBytes = 0;
  if (metadata !== undefined) {
    const text = JSON.stringify(metadata);
    metadataBytes = Buffer.byteLength(text, 'utf8');
    const room = Math.min(METADATA_BYTES, Math.floor(maxBytes / 4));
    if (metadataBytes > room) {
      metadata = cutUtf8(text, room);
      metadataBytes = room;
      truncated = true;
    }
  }
  const content = boundValue(answer.content, Math.max(64, maxBytes - metadataBytes));
  truncated ||= content.truncated === true;
  return {
    ...answer,
    content: content.value as string,
    ...(metadata !== undefined ? { metadata } : {}),
    ...(truncated ? { bytes: Buffer.byteLength(answer.content, 'utf8'), truncated } : {}),
  };
}
