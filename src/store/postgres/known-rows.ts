// The rows a Postgres transaction or listing reads: small ones whole; a large one by its size and first characters
// first, taken as this process already holds it when it is a record it knows, else read whole in one more round trip.
import { HEAD_CHARS, KNOWN_FROM_BYTES, type KnownRecords } from '../known-records.js';
import type { StoredRecord } from '../types.js';
import { decode } from './sql.js';

/** The columns of a {@link SizedRow} (`record` comes whole under {@link KNOWN_FROM_BYTES}). */
export const SIZED_COLUMNS = `key, CASE WHEN octet_length(record) < ${KNOWN_FROM_BYTES} THEN record END AS record,
  octet_length(record) AS bytes, CASE WHEN octet_length(record) >= ${KNOWN_FROM_BYTES} THEN left(record, ${HEAD_CHARS}) END AS head`;

/** A row as a transaction reads it first: its text, or (`record` null) a large one's size and first characters. */
export type SizedRow = { key: string; record: string | null; bytes: number; head: string | null };

/** A row read: the record this process knows, or the stored text (to decode). */
export type ReadRow = StoredRecord | string;

/**
 * The rows as records or texts: a large row is the record this process knows when it matches, else its text read
 * whole through `readWhole` (one round trip for all of them). Every row a transaction reads is committed: the
 * transaction holds the store's lock, and its own writes go only with its COMMIT (a listing outside one passes a
 * `readWhole` that checks each text is still the row it listed).
 */
export async function readRows(
  rows: SizedRow[],
  known: KnownRecords,
  readWhole: (keys: string[]) => Promise<Map<string, string>>,
): Promise<Array<[string, ReadRow]>> {
  const out: Array<[string, ReadRow | undefined]> = [];
  const missing: string[] = [];
  for (const row of rows) {
    const found = row.record ?? known.find(row.key, Number(row.bytes), row.head ?? '');
    if (found === undefined) missing.push(row.key);
    out.push([row.key, found]);
  }
  if (missing.length > 0) {
    const texts = await readWhole(missing);
    for (const entry of out) entry[1] ??= texts.get(entry[0]);
  }
  // A row removed between the two reads cannot be: the store's lock is held.
  return out.filter((entry): entry is [string, ReadRow] => entry[1] !== undefined);
}

/** A read row's record: a text is decoded (CORRUPT_RECORD for `key` when it is not one) and, if large, known from now on. */
export function recordOf(key: string, row: ReadRow, known: KnownRecords): StoredRecord {
  if (typeof row !== 'string') return row;
  const record = decode(key, row);
  known.remember(key, row, record);
  return record;
}

/** Read rows as a listing's records: a corrupt row is skipped (reading that key directly reports it). */
export function listedRecords(rows: Array<[string, ReadRow]>, known: KnownRecords): Array<[string, StoredRecord]> {
  const out: Array<[string, StoredRecord]> = [];
  for (const [key, row] of rows) {
    try {
      out.push([key, recordOf(key, row, known)]);
    } catch {
      // skipped
    }
  }
  return out;
}
