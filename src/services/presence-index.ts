// Signs of life by agent name and by type: copies written in the commit of each sign of life and expiring with it, so
// mail to a name or a type reads that name's or type's entries, not the whole roster.
import * as z from 'zod';
import { FAMILY, parseKey, type Keys } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';

/**
 * The namespace's record of since when every sign of life written has its copies (store clock; 0 when there was none
 * before). A store written by an older version has signs of life without copies: until the roster window reaches no
 * further back than this, mail to a name or type reads every sign of life, as before.
 */
export const IndexedSince = z.object({ since: z.number() });

/** How much later than `since` plus the window the copies are trusted (clocks of the store's hosts may differ a little). */
const SKEW_MS = 60_000;
/** How often a process looks again for the record (gone with a deleted namespace): at most once a minute per namespace. */
const RECHECK_MS = 60_000;
/** Per store, by record key: when this process last found the record. */
const CHECKED = new WeakMap<VersionedStore, Map<string, number>>();
/**
 * Per store, by record key: the record's `since` as this process last found it, and when. Each caller judges it by its
 * own window (servers of one store may have different ones); it is read again after {@link RECHECK_MS}.
 */
const FOUND = new WeakMap<VersionedStore, Map<string, { since: number; at: number }>>();

/** A sign of life (`presence.ts`), as far as its copies' keys go. */
type Sign = { agent?: string; agentType?: string; thread: string };
const SignSchema = z.object({ agent: z.string().optional(), agentType: z.string().optional(), thread: z.string() }).passthrough();

/** The copy of a sign of life by type (the key under the type: agent name or `-`, and thread). */
const typeKey = (sign: Sign): string => `${sign.agent ?? '-'}:${sign.thread}`;

/**
 * Writes a sign of life's copies beside it with `write` (same value, same expiry), and drops its copy under the type
 * it had before when its type changed. `previous` is the sign of life it replaces, if any.
 */
export async function copyIn(
  tx: StoreTx,
  keys: Keys,
  sign: Sign,
  previous: Sign | undefined,
  write: (key: string) => Promise<unknown>,
  by: string,
): Promise<void> {
  if (sign.agent !== undefined) await write(keys.presenceBy('agent', sign.agent, sign.thread));
  if (sign.agentType !== undefined) await write(keys.presenceBy('type', sign.agentType, typeKey(sign)));
  if (previous?.agentType !== undefined && previous.agentType !== sign.agentType)
    await tx.delete(keys.presenceBy('type', previous.agentType, typeKey(sign)), { by });
}

/**
 * Makes sure the namespace says since when its signs of life have copies, before this process writes one: `0` when
 * it has no sign of life yet (a new namespace is indexed from the start), else now.
 */
export async function markIndexedIn(tx: StoreTx, store: VersionedStore, keys: Keys, by: string): Promise<void> {
  const key = keys.presenceIndexed();
  const checked = CHECKED.get(store) ?? new Map<string, number>();
  CHECKED.set(store, checked);
  const at = checked.get(key);
  if (at !== undefined && tx.now - at < RECHECK_MS) return;
  // remembered once found, not once written: a transaction run again (Redis) must write it again
  if ((await tx.get(key)) !== undefined) checked.set(key, tx.now);
  else await tx.set(key, { since: (await tx.list({ ...keys.presenceRange(), limit: 1 })).length === 0 ? 0 : tx.now }, { by });
}

/**
 * Whether every sign of life within `windowMs` has its copies: the namespace's record says they are kept since a time
 * the window no longer reaches back to.
 */
export async function copiesComplete(store: VersionedStore, keys: Keys, windowMs: number): Promise<boolean> {
  const key = keys.presenceIndexed();
  const found = FOUND.get(store) ?? new Map<string, { since: number; at: number }>();
  FOUND.set(store, found);
  const now = store.now();
  let known = found.get(key);
  if (known === undefined || now - known.at >= RECHECK_MS) {
    const record = IndexedSince.safeParse((await store.get(key))?.value);
    known = record.success ? { since: record.data.since, at: now } : undefined;
    if (known === undefined) found.delete(key);
    else found.set(key, known);
  }
  return known !== undefined && (known.since === 0 || known.since + windowMs + SKEW_MS <= now);
}

/**
 * Whether a record is this store's index of its signs of life (a copy, or the record of since when copies are kept):
 * derived from the signs of life here, so left out of namespace documents and never taken from one.
 */
export function isIndexRecord(keys: Keys, key: string): boolean {
  const parsed = parseKey(keys.namespace, key);
  return (
    parsed?.kind === 'family' && [FAMILY.presenceByAgent, FAMILY.presenceByType, FAMILY.presenceIndexed].some((f) => f === parsed.family)
  );
}

/**
 * What a namespace import does with a record at `key` (`entry`, replacing `before`): a sign of life gets its copies
 * (made from it: a document from an older version has none, and one read while a sign of life changed may hold a copy
 * that says otherwise), and the index's own records are not imported (see {@link isIndexRecord}). False: leave the
 * record out.
 */
export async function importIn(
  tx: StoreTx,
  keys: Keys,
  key: string,
  before: Json | undefined,
  entry: Omit<Entry, 'revision'>,
  by: string,
): Promise<boolean> {
  if (isIndexRecord(keys, key)) return false;
  const { lo, hi } = keys.presenceRange();
  const sign = key >= lo && key < hi ? SignSchema.safeParse(entry.value) : undefined;
  if (!sign?.success) return true;
  const previous = SignSchema.safeParse(before);
  // as the record itself is imported: the very record again is not written again
  await copyIn(tx, keys, sign.data, previous.success ? previous.data : undefined, (copy) => tx.putEntry(copy, entry), by);
  return true;
}
