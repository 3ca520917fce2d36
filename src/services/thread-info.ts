// A thread's info record: where it sits in its delegation tree, its runs, its owner.
import * as z from 'zod';
import { invalid } from '../errors.js';
import type { Keys } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { StoreTx } from '../store/versioned-store.js';
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
/** Whether two thread infos say the same (a connection entering a thread that says so already has nothing to write). */
export const sameThreadInfo = (a: ThreadInfo, b: ThreadInfo): boolean =>
  a.parent === b.parent && a.root === b.root && a.level === b.level && a.runs === b.runs && a.run === b.run && a.owner === b.owner;
/** What is known of a thread, from its stored record (`undefined` when none). */
export const threadInfoOf = (value: Json | undefined): ThreadInfo | undefined =>
  value === undefined ? undefined : decode(ThreadInfoRecord, value, 'thread');

/** The thread's current run, read in `tx` ('' before it has one). */
export async function runOf(tx: Pick<StoreTx, 'get'>, keys: Keys, thread: string): Promise<string> {
  return threadInfoOf((await tx.get(keys.threadInfo(thread)))?.value)?.run ?? '';
}

/**
 * The delegation tree stays a tree, and a thread stays in it: `thread` may be given `parent` only when that is its
 * parent already, or when it has none and `parent` is neither itself nor below it. Moving a thread to another parent,
 * or under itself, would take it (and what it spends) out from under the budgets of the threads above it.
 */
export async function checkParent(
  read: (key: string) => Promise<{ value: Json } | undefined>,
  keyOf: (thread: string) => string,
  thread: string,
  parent: string,
): Promise<void> {
  const refuse = (why: string): never => {
    throw invalid(`${why}. Nothing was changed. Leave parentThread out to keep the thread where it is.`, {
      thread,
      parentThread: parent,
      path: 'parentThread',
    });
  };
  if (parent === thread) refuse(`Thread ${thread} cannot be its own parent`);
  const known = threadInfoOf((await read(keyOf(thread)))?.value);
  if (known?.parent !== undefined) {
    if (known.parent !== parent) refuse(`Thread ${thread} is a child of ${known.parent} already; a thread's parent does not change`);
    return;
  }
  // `thread` has no parent: `parent` must not be below it
  let above: string | undefined = parent;
  for (let hops = 0; above !== undefined && hops < 64; hops++) {
    if (above === thread) refuse(`Thread ${parent} is below ${thread}, so ${thread} cannot be its child: that would close a loop`);
    above = threadInfoOf((await read(keyOf(above)))?.value)?.parent;
  }
}
