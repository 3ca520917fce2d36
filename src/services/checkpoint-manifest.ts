// What is stored of a checkpoint: its manifest, its index entry (a summary), the thread's head; newest-first paging.
import * as z from 'zod';
import { BlackboardError, invalid } from '../errors.js';
import { lastPart, type Keys } from '../keyspace.js';
import type { Json, KeyRange, RangeQuery } from '../store/types.js';
import type { Entry, StoreTx } from '../store/versioned-store.js';
import { FORMAT, type SavedRecord } from './checkpoint-document.js';
import { notOurCursor } from './cursor.js';

export interface CheckpointInfo {
  checkpointId: string;
  thread: string;
  run: string;
  label?: string;
  createdAt: string;
  /** the thread's revision when saved: pass it as ifRevision to restore only if nothing changed since */
  revision: number;
  records: number;
  /** JSON size of the saved state */
  bytes: number;
}

/**
 * The stored manifest: record metadata plus what is kept of each value (its hash, and for an append's sake its length,
 * chain depth and size, see `BlobRef`); the values live once in content-addressed blobs.
 */
export const Manifest = z.object({
  format: z.literal(FORMAT),
  thread: z.string(),
  run: z.string(),
  label: z.string().optional(),
  createdAt: z.number(),
  revision: z.number(),
  bytes: z.number(),
  records: z.record(
    z.string(),
    z.object({
      h: z.string(),
      ver: z.number().int().positive(),
      at: z.number(),
      by: z.string(),
      exp: z.number().optional(),
      n: z.number().int().min(0).optional(),
      d: z.number().int().min(0).optional(),
      b: z.number().int().min(0).optional(),
    }),
  ),
});
export type Manifest = z.infer<typeof Manifest>;

/**
 * A checkpoint's index entry: its summary, so listing reads no manifest. Checkpoints saved before summaries were kept
 * have `1` there instead; their manifest is read.
 */
const Summary = z.object({
  run: z.string(),
  label: z.string().optional(),
  createdAt: z.number(),
  revision: z.number(),
  records: z.number(),
  bytes: z.number(),
});

/** A thread's head: how many checkpoints it has and its newest one (a save's delta base). */
export const Head = z.object({ count: z.number().int().min(0), latest: z.string().optional() });
export type Head = z.infer<typeof Head>;

export const CP_ID_RE = /^cp-[0-9a-z]{9}-[0-9a-f]{8}$/;
/** The revision an id was made at: ids sort in the order checkpoints were made. */
export const revisionOf = (id: string): number => parseInt(id.slice(3, 12), 36);
export const idAt = (revision: number, suffix: string): string => `cp-${revision.toString(36).padStart(9, '0')}-${suffix}`;

export function summaryOf(m: Manifest): Json {
  return {
    run: m.run,
    ...(m.label !== undefined ? { label: m.label } : {}),
    createdAt: m.createdAt,
    revision: m.revision,
    records: Object.keys(m.records).length,
    bytes: m.bytes,
  };
}

export function info(id: string, thread: string, m: z.infer<typeof Summary>): CheckpointInfo {
  return {
    checkpointId: id,
    thread,
    run: m.run,
    ...(m.label !== undefined ? { label: m.label } : {}),
    createdAt: new Date(m.createdAt).toISOString(),
    revision: m.revision,
    records: m.records,
    bytes: m.bytes,
  };
}

export const infoOfManifest = (id: string, m: Manifest): CheckpointInfo =>
  info(id, m.thread, { ...m, records: Object.keys(m.records).length });

/** The listing from an index entry's summary, or `undefined` for an older entry (its manifest has it). */
export function infoOfIndex(id: string, thread: string, value: Json): CheckpointInfo | undefined {
  const summary = Summary.safeParse(value);
  return summary.success ? info(id, thread, summary.data) : undefined;
}

/** Reads a key range (ascending) of the store; the listing's only access to it. */
export type RangeReader = (range: KeyRange) => Promise<Array<[string, Entry]>>;

/**
 * The newest `limit` index entries of a thread older than `before` (a checkpoint id; none = from the newest), newest
 * first, and whether there are more. Store ranges read in key order only, so this reads windows of ids ending at
 * `before`, each four times wider than the last, until one holds more than `limit` or reaches the oldest: the last
 * few of hundreds of checkpoints cost one short read.
 */
export async function newestIndexEntries(
  keys: Keys,
  read: RangeReader,
  thread: string,
  opts: { limit: number; before?: string; top: number },
): Promise<{ entries: Array<[string, Entry]>; more: boolean }> {
  const all = keys.checkpointIndexRange(thread);
  const hi = opts.before !== undefined ? keys.checkpointIndex(thread, opts.before) : all.hi;
  const top = opts.before !== undefined ? revisionOf(opts.before) : opts.top;
  for (let width = Math.max(16, opts.limit * 4); ; width *= 4) {
    const from = top - width;
    const lo = from <= 0 ? all.lo : keys.checkpointIndex(thread, idAt(from, ''));
    const rows = await read({ lo, hi });
    if (rows.length > opts.limit || from <= 0) {
      return { entries: rows.slice(Math.max(0, rows.length - opts.limit)).reverse(), more: rows.length > opts.limit };
    }
  }
}

/** A listing cursor (the id of the last checkpoint returned); INVALID_ARGUMENT when it is not one. */
export function checkCursor(cursor: unknown): string {
  if (typeof cursor !== 'string' || !CP_ID_RE.test(cursor)) {
    throw notOurCursor();
  }
  return cursor;
}

export type Lister = (query: Omit<RangeQuery, 'now'>) => Promise<Array<[string, Entry]>>;

/** Every live record of a range, page by page. */
export async function all(tx: StoreTx, range: KeyRange): Promise<Array<[string, Entry]>> {
  return allOf((q) => tx.list(q), range);
}

export async function allOf(list: Lister, range: KeyRange): Promise<Array<[string, Entry]>> {
  const rows: Array<[string, Entry]> = [];
  let after: string | undefined;
  for (;;) {
    const page = await list({ ...range, after, limit: 1000 });
    rows.push(...page);
    if (page.length < 1000) return rows;
    after = page[page.length - 1][0];
  }
}

export function notFound(id: string): BlackboardError {
  return new BlackboardError(
    'NOT_FOUND',
    `There is no checkpoint "${id}". Use {tool:checkpoint_list} to see the checkpoints of a thread.`,
    { checkpointId: id },
  );
}

export function checkId(id: string): string {
  if (typeof id !== 'string' || !CP_ID_RE.test(id)) {
    throw invalid('checkpointId is not a checkpoint id. Use one returned by {tool:checkpoint_save} or {tool:checkpoint_list}.', {
      checkpointId: String(id).slice(0, 80),
      path: 'checkpointId',
    });
  }
  return id;
}

/** The thread's head; made from its index the first time (checkpoints saved before heads were kept). */
export async function headIn(tx: StoreTx, keys: Keys, thread: string): Promise<Head> {
  const head = Head.safeParse((await tx.get(keys.checkpointHead(thread)))?.value);
  if (head.success) return head.data;
  const rows = await all(tx, keys.checkpointIndexRange(thread));
  return { count: rows.length, ...(rows.length > 0 ? { latest: lastPart(rows[rows.length - 1][0]) } : {}) };
}

export async function setHead(tx: StoreTx, keys: Keys, thread: string, by: string, head: Head): Promise<void> {
  await tx.putEntry(keys.checkpointHead(thread), { value: head as Json, version: 1, updatedAt: tx.now, updatedBy: by });
}

/** The thread's head after checkpoint `id` was deleted: one fewer, and no newest when it was the newest. */
export async function headWithout(tx: StoreTx, keys: Keys, thread: string, id: string, by: string): Promise<void> {
  const head = await headIn(tx, keys, thread);
  const latest = head.latest === id ? undefined : head.latest;
  await setHead(tx, keys, thread, by, { count: Math.max(0, head.count - 1), ...(latest !== undefined ? { latest } : {}) });
}

/**
 * What can be read of a manifest, damaged or not: its thread, and the hashes of the values it holds (released when it
 * is deleted).
 */
export function manifestRefs(value: unknown): { thread?: string; hashes: string[] } {
  const m = (value ?? {}) as { thread?: unknown; records?: Record<string, { h?: unknown } | null> };
  const hashes = Object.values(m.records ?? {}).flatMap((meta) => (typeof meta?.h === 'string' ? [meta.h] : []));
  return { ...(typeof m.thread === 'string' ? { thread: m.thread } : {}), hashes };
}

/** How many checkpoints one list call returns by default, and at most. */
export const DEFAULT_LIST = 100;
export const MAX_LIST = 1000;
export type Reader = Pick<StoreTx, 'get'>;
/** A saved record's metadata, without its value. */
export const metaOf = ({ v: _v, ...meta }: SavedRecord): Omit<SavedRecord, 'v'> => meta;
