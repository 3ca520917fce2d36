// A thread's info record: where it sits in its delegation tree, its runs, its owner.
import * as z from 'zod';
import type { Json } from '../store/types.js';
import { decode } from './records.js';

/**
 * What is remembered about a thread, as stored (the board reads it too): where it sits in its delegation tree
 * (`parent`, `root`, `level`), how many runs it has had, and its current run, shared by every connection serving it.
 */
export const ThreadInfoRecord = z.object({
  parent: z.string().optional(),
  root: z.string(),
  level: z.number().int(),
  runs: z.number().int(),
  run: z.string().optional(),
  /** the agent that created the thread: it (or an owner of a thread above) may write into it from elsewhere */
  owner: z.string().optional(),
});
export type ThreadInfo = z.infer<typeof ThreadInfoRecord>;
/** What is known of a thread, from its stored record (`undefined` when none). */
export const threadInfoOf = (value: Json | undefined): ThreadInfo | undefined =>
  value === undefined ? undefined : decode(ThreadInfoRecord, value, 'thread');
