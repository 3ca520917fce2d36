// What checkpoint transactions read: a thread's state, and what deleting checkpoints reads, in few round trips.
import { resolveScope, type Identity } from '../context.js';
import { lastPart, type KeyRange, type Keys } from '../keyspace.js';
import type { Entry, StoreTx } from '../store/versioned-store.js';
import { all, manifestRefs } from './checkpoint-manifest.js';
import { runOf } from './thread-info.js';

/** Where a thread's state lives when it is at `run`: key ranges, plan index ranges, single keys. */
export function stateOf(keys: Keys, who: Identity, thread: string, run: string): ReturnType<Keys['threadState']> {
  return keys.threadState(thread, resolveScope('thread', { ...who, thread }).id, resolveScope('run', { ...who, thread, run }).id, run);
}

/**
 * What a checkpoint transaction of `thread` reads first, to hand to the transaction's first round trip: its info, and
 * if it is at `run` the single keys (`extra` joins them) and the key ranges of its state.
 */
export function firstReads(
  keys: Keys,
  who: Identity,
  thread: string,
  run: string,
  extra: string[] = [],
): { prefetch: string[]; prefetchRanges: KeyRange[] } {
  const state = stateOf(keys, who, thread, run);
  return { prefetch: [keys.threadInfo(thread), ...extra, ...state.keys], prefetchRanges: [...state.ranges, ...state.planIndexes] };
}

/**
 * The live records that make up a thread's state, keyed by storage key. `extra` keys are fetched along with the first
 * read that needs a round trip (a save's previous manifest); `fetchedRun`: the run whose {@link firstReads} the
 * transaction's first round trip fetched.
 */
export async function collectState(
  tx: StoreTx,
  keys: Keys,
  who: Identity,
  thread: string,
  extra: string[] = [],
  fetchedRun?: string,
): Promise<{ run: string; entries: Array<[string, Entry]> }> {
  const run = await runOf(tx, keys, thread);
  const state = stateOf(keys, who, thread, run);
  const more = [...(run === fetchedRun ? [] : state.keys), ...extra];
  // Asked for at once: a backend that can pipeline reads (Redis) sends them together.
  const [, ranges, planIndexes] = await Promise.all([
    more.length > 0 ? tx.prefetch(more) : undefined,
    Promise.all(state.ranges.map((range) => all(tx, range))),
    Promise.all(state.planIndexes.map((range) => all(tx, range))),
  ]);
  const out = ranges.flat();
  // Plans of the thread and of its run: the index entries and the plans they point at.
  const indexes = planIndexes.flat();
  const plans = indexes.map(([key]) => keys.plan(lastPart(key)));
  if (plans.length > 0) await tx.prefetch(plans);
  for (const [i, entry] of indexes.entries()) {
    out.push(entry);
    const plan = await tx.get(plans[i]);
    if (plan) out.push([plans[i], plan]);
  }
  for (const key of state.keys) {
    const entry = await tx.get(key);
    if (entry) out.push([key, entry]);
  }
  return { run, entries: out };
}

/** Reads what deleting these checkpoints reads first (manifests, index entries, reference counts) in two round trips. */
export async function prefetchForDelete(tx: StoreTx, keys: Keys, ids: string[]): Promise<void> {
  await tx.prefetch(ids.map((id) => keys.checkpoint(id)));
  const more: string[] = [];
  for (const id of ids) {
    const { thread, hashes } = manifestRefs((await tx.get(keys.checkpoint(id)))?.value);
    if (thread !== undefined) more.push(keys.checkpointIndex(thread, id));
    for (const hash of hashes) more.push(keys.blobRefs(hash));
  }
  await tx.prefetch(more);
}
