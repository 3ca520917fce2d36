// The finalizer service: one final answer per run, the first one set wins.
import { BlackboardError, invalid, writing } from '../errors.js';
import { checkName, idempotent, type CallOptions } from '../context.js';
import * as z from 'zod';
import type { Json } from '../store/types.js';
import type { Entry, VersionedStore } from '../store/versioned-store.js';
import { checkTimeout } from './arguments.js';
import type { LifecycleService } from './lifecycle.js';
import { anyJson, decode, encode } from './records.js';
import type { Session } from './session.js';

export interface FinalAnswer {
  content: string;
  metadata?: Json;
  thread: string;
  run: string;
  setAt: string;
  setBy: string;
}

/** The stored answer: the run it belongs to, so a new run takes a new answer. */
export const AnswerRecord = z.object({ content: z.string(), metadata: anyJson.optional(), run: z.string() });
type AnswerRecord = z.infer<typeof AnswerRecord>;
const answerOf = (entry: Entry): AnswerRecord => decode(AnswerRecord, entry.value, 'final answer');

/**
 * Single assignment per run: the first `final_answer_set` wins atomically (across processes); any later one fails
 * with MULTIPLE_FINAL_ANSWERS carrying the first answer. Kept per thread, so a parent can wait on a child thread.
 */
export class FinalizerService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly lifecycle: LifecycleService,
  ) {}

  key(thread: string): string {
    return this.session.keys.finalAnswer(thread);
  }

  async set(args: { content: string; metadata?: Json; idempotencyKey?: string }, call: CallOptions): Promise<{ answer: FinalAnswer }> {
    if (typeof args.content !== 'string' || args.content === '') throw invalid('content must be non-empty text.', { path: 'content' });
    await this.session.refresh();
    const who = this.session.identity;
    const { result } = await this.store.transact(
      async (tx) => {
        await this.lifecycle.assertActive(tx, who);
        const existing = await tx.get(this.key(who.thread));
        if (existing && answerOf(existing).run === who.run) {
          throw new BlackboardError(
            'MULTIPLE_FINAL_ANSWERS',
            'This run already has a final answer; it cannot be replaced. Use the answer in details.answer. Add anything further with {tool:history_append}.',
            { answer: view(who.thread, existing) },
          );
        }
        const record: AnswerRecord = {
          content: args.content,
          run: who.run,
          ...(args.metadata !== undefined ? { metadata: args.metadata } : {}),
        };
        // the answer's content is text: only its metadata can be refused as a value
        return view(who.thread, await writing('metadata', () => tx.set(this.key(who.thread), encode(record), { by: this.session.by })));
      },
      { ...idempotent(who, call, args) },
    );
    return { answer: result };
  }

  /**
   * This run's answer, or another thread's latest. With `waitMs`, blocks until it is set (like `watch`).
   */
  async get(
    args: { thread?: string; waitMs?: number },
    signal?: AbortSignal,
  ): Promise<{ isSet: boolean; answer?: FinalAnswer; timedOut?: boolean }> {
    await this.session.refresh();
    const who = this.session.identity;
    const thread = args.thread === undefined ? who.thread : checkName('thread', args.thread, 'thread');
    const run = who.run;
    const counts = (entry: Entry | undefined): boolean => entry !== undefined && (thread !== who.thread || answerOf(entry).run === run);
    if (args.waitMs === undefined) {
      const entry = await this.store.get(this.key(thread));
      return counts(entry) ? { isSet: true, answer: view(thread, entry!) } : { isSet: false };
    }
    const timeoutMs = checkTimeout(args.waitMs, 0, 'waitMs');
    const { entry, timedOut } = await this.store.waitUntil(this.key(thread), counts, { timeoutMs, signal });
    return counts(entry) ? { isSet: true, answer: view(thread, entry!), timedOut: false } : { isSet: false, timedOut };
  }
}

function view(thread: string, entry: Entry): FinalAnswer {
  const record = answerOf(entry);
  return {
    content: record.content,
    ...(record.metadata !== undefined ? { metadata: record.metadata } : {}),
    thread,
    run: record.run,
    setAt: new Date(entry.updatedAt).toISOString(),
    setBy: entry.updatedBy,
  };
}
