// The Redis backend's records and read sets: record text, listing replies, and the commit script's arguments.
import { decodeRecord, RECORD_PREFIX } from '../codec.js';
import { KNOWN_FROM_BYTES, type WrittenRow } from '../known-records.js';
import { compareKeys } from '../keys.js';
import type { RedisConnection } from './client.js';
import type { ChangeQuery, ChangeRow, RangeQuery, RecordWrite, StoredRecord, Writes } from '../types.js';

/** Version of a raw record as the commit script checks it: 0 = absent, -1 = unreadable. */
export const revOf = (raw: string | null | undefined): number => {
  if (raw === null || raw === undefined) return 0;
  const match = /^\{"rev":(\d+),/.exec(raw);
  return match ? Number(match[1]) : -1;
};

/** A record from its stored JSON text; text that is not a record is `CORRUPT_RECORD` for `key`. */
export const decode = decodeRecord;

/** A record as a reading script gave it: its revision as the commit script checks it, and the record (or none). */
export interface FetchedRow {
  readonly rev: number;
  get(): StoredRecord | undefined;
}

/** A listing made by a transaction, as the commit script checks it again. */
export interface Listed {
  rows: Array<[string, StoredRecord]>;
  revision: number;
  /** the LIST script's arguments (none: an empty range, nothing to check) */
  args: string[];
  /** every row the script returned, corrupt ones included: key and revision */
  seen: Array<[string, number]>;
}

/** The LIST script's arguments for `query`, or undefined when its range cannot hold anything. */
export function listArgs(query: RangeQuery): string[] | undefined {
  if (query.limit <= 0 || compareKeys(query.lo, query.hi) >= 0) return undefined;
  const useAfter = query.after !== undefined && compareKeys(query.after, query.lo) >= 0;
  const start = useAfter ? `(${query.after}` : query.lo === '' ? '-' : `[${query.lo}`;
  return [start, `(${query.hi}`, String(query.limit), String(query.now)];
}

/**
 * A LIST script's reply (`revision, epoch, key, record, key, record…`) as a listing made with `args`; `fetched` reads
 * each record of it (a text, or the revision of one this process holds).
 */
export function readListing(reply: unknown[], args: string[], fetched: (key: string, value: unknown) => FetchedRow): Listed {
  const revision = Number(reply[0]);
  const rows: Array<[string, StoredRecord]> = [];
  const seen: Array<[string, number]> = [];
  for (let i = 2; i < reply.length; i += 2) {
    const key = String(reply[i]);
    const row = fetched(key, reply[i + 1]);
    seen.push([key, row.rev]);
    try {
      const record = row.get();
      if (record !== undefined) rows.push([key, record]);
    } catch {
      // A corrupt record is skipped in listings; reading that key directly reports it.
    }
  }
  return { rows, revision, args, seen };
}

/**
 * The COMMIT script's arguments: the read set (each record read with the revision it had, each listing to run
 * again with the rows it returned), then `writes` (none: the script only checks), with the token of the turn the
 * transaction may hold (see turn.ts); and, once it committed as
 * `revision`, the rows it wrote (large records with their stored text; every other written key as `null`).
 */
export function commitPlan(
  reads: Map<string, number>,
  lists: Listed[],
  now: number,
  maxLogEntries: number,
  writes: Writes,
  markerTtlMs = 0,
  turnToken = '',
): { args: string[]; written: (revision: number) => WrittenRow[] } {
  const large: Array<[key: string, body: string, record: RecordWrite]> = [];
  const checked = lists.filter((list) => list.args.length > 0);
  const args = [String(now), String(maxLogEntries), String(reads.size), String(checked.length), String(markerTtlMs), turnToken];
  for (const [key, rev] of reads) args.push(key, String(rev));
  for (const list of checked) {
    args.push(...list.args, String(list.seen.length));
    for (const [key, rev] of list.seen) args.push(key, String(rev));
  }
  for (const [key, write] of writes) {
    const record = write.record;
    if (record === null) {
      args.push(key, '', '', '', '');
      continue;
    }
    // The text is JSON.stringify's; the script prepends `{"rev":N,` to it (a record written through a
    // transaction never carries a revision of its own).
    const text = JSON.stringify({ ...record, rev: undefined });
    if (text.length >= KNOWN_FROM_BYTES / 4) large.push([key, text.slice(1), record]);
    args.push(
      key,
      text.slice(1),
      record.exp !== undefined ? String(record.exp) : '',
      record.del === 1 ? String(record.at) : '',
      write.log ? `${record.ver}${record.del === 1 ? 'd' : ''}` : '',
    );
  }
  const written = (revision: number): WrittenRow[] => {
    const rows = new Map<string, WrittenRow[1]>([...writes.keys()].map((key) => [key, null]));
    for (const [key, body, record] of large)
      rows.set(key, { text: `${RECORD_PREFIX}${revision},${body}`, record: { ...record, rev: revision } });
    return [...rows];
  };
  return { args, written };
}

/**
 * The change log after `query.after`, read in batches (each batch reads the revision and the entries together: once
 * the end of the log is reached, every logged write at or below that revision has been read).
 */
export async function readChanges(
  redis: RedisConnection,
  query: ChangeQuery,
  see: (revision: number) => void,
): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
  const changes: ChangeRow[] = [];
  /** rows of the revision being read, sorted by key once it is complete (a large commit spans entries) */
  let pending: ChangeRow[] = [];
  const flush = (): boolean => {
    pending.sort((a, b) => compareKeys(a.key, b.key));
    for (const row of pending) {
      if (changes.length >= query.limit) break;
      changes.push(row);
    }
    pending = [];
    return changes.length >= query.limit;
  };
  const batch = Math.min(1000, Math.max(100, query.limit));
  let start = `${query.after + 1}-0`;
  for (;;) {
    // Each call reads the revision and the entries together: once the end of the log is reached, every logged
    // write at or below that revision has been read.
    const [rev, compacted, entries] = (await redis.script('CHANGES', [start, String(batch)])) as [
      string,
      string,
      Array<[string, string[]]>,
    ];
    const revision = Number(rev);
    see(revision);
    for (const [id, fields] of entries) {
      const entryRevision = Number(id.slice(0, id.indexOf('-')));
      if (pending.length > 0 && pending[0].revision !== entryRevision && flush()) {
        return { changes, revision, compacted: Number(compacted) };
      }
      for (let i = 2; i < fields.length; i += 2) {
        const key = fields[i];
        if (compareKeys(key, query.lo) < 0 || compareKeys(key, query.hi) >= 0) continue;
        const value = fields[i + 1];
        pending.push({ revision: entryRevision, key, version: parseInt(value, 10), deleted: value.endsWith('d') });
      }
    }
    if (entries.length < batch) {
      flush();
      return { changes, revision, compacted: Number(compacted) };
    }
    start = `(${entries[entries.length - 1][0]}`;
  }
}
