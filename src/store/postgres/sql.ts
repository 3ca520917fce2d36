// The Postgres backend's SQL: literals, the one write statement of a commit, range conditions and record decoding.
import { decodeRecord, recordText } from '../codec.js';
import { compareKeys } from '../keys.js';
import type { Tables } from './schema.js';
import type { WrittenRow } from '../known-records.js';
import type { RangeQuery, StoredRecord, Writes } from '../types.js';

/**
 * Statements that travel with others in one round trip (`BEGIN; …; COMMIT`) use the simple query protocol, which
 * takes no parameters: their values are quoted as the driver's own `escapeLiteral` quotes them (quotes and backslashes
 * doubled, `E'…'` when there is a backslash), with two native replacements instead of its character-by-character
 * loop, which takes a millisecond per 150 KB record.
 */
export const lit = (value: string): string => {
  const quoted = `'${value.replaceAll("'", "''").replaceAll('\\', '\\\\')}'`;
  return value.includes('\\') ? ` E${quoted}` : quoted;
};
export const num = (value: number | undefined): string => {
  if (value === undefined) return 'NULL';
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  return String(value);
};
export const array = (values: string[], type: string): string => `${values.length ? `ARRAY[${values.join(',')}]` : 'ARRAY[]'}::${type}[]`;

/**
 * Record texts from this size go as parameters of the statement rather than quoted into it. Postgres reads a long
 * literal several times over: a 140 KB record took 6.2 ms to write as a literal, 4.3 ms as a parameter (at 28 KB the
 * separate COMMIT a parameter needs costs more than it saves).
 */
export const PARAMETER_FROM_CHARS = 48 * 1024;

/**
 * One statement: the revision bump, the puts, the removals and the change log entries; what it writes, by key; and
 * `params`, the large record texts it refers to as `$1`, `$2`… (none: the statement can go with its COMMIT).
 */
export function writeStatement(
  t: Tables,
  writes: Writes,
  next: number,
  now: number,
): { sql: string; params: string[]; written: WrittenRow[] } {
  const written: WrittenRow[] = [];
  const params: string[] = [];
  const puts: string[] = [];
  const removed: string[] = [];
  const log = { keys: [] as string[], versions: [] as string[], deleted: [] as string[] };
  for (const [key, write] of writes) {
    if (write.record === null) {
      removed.push(lit(key));
      written.push([key, null]);
    } else {
      const record: StoredRecord = { rev: next, ...write.record };
      const text = recordText(record);
      written.push([key, { text, record }]);
      const quoted = text.length >= PARAMETER_FROM_CHARS ? `$${params.push(text)}::text` : lit(text);
      puts.push(`(${lit(key)}, ${quoted}, ${num(record.exp)}::float8, ${record.del === 1 ? num(record.at) : 'NULL'}::float8)`);
    }
    if (write.log && write.record !== null) {
      // Physical removals (the sweeper's) are never logged.
      log.keys.push(lit(key));
      log.versions.push(num(write.record.ver));
      log.deleted.push(write.record.del === 1 ? 'true' : 'false');
    }
  }
  const parts = [`bump AS (UPDATE ${t.meta} SET revision = ${next} WHERE id = 1)`];
  if (puts.length > 0) {
    // Rows of VALUES, not unnest() of arrays: an array holding a large record (a 75 KB list) made its write take 2 ms
    // longer on the server.
    parts.push(`put AS (INSERT INTO ${t.records} (key, record, exp, tomb_at) VALUES ${puts.join(', ')}
      ON CONFLICT (key) DO UPDATE SET record = excluded.record, exp = excluded.exp, tomb_at = excluded.tomb_at)`);
  }
  if (removed.length > 0) parts.push(`gone AS (DELETE FROM ${t.records} WHERE key = ANY(${array(removed, 'text')}))`);
  if (log.keys.length > 0) {
    parts.push(`logged AS (INSERT INTO ${t.changes} (revision, key, version, deleted, at)
      SELECT ${next}, k, v, d, ${num(now)} FROM unnest(${array(log.keys, 'text')}, ${array(log.versions, 'bigint')}, ${array(log.deleted, 'boolean')}) AS u(k, v, d))`);
  }
  return { sql: `WITH ${parts.join(',\n')} SELECT 1`, params, written };
}

/** `key` conditions of a range read; parameters are numbered from `first`. */
export function rangeWhere(query: RangeQuery, first: number): [string, unknown[]] {
  const useAfter = query.after !== undefined && compareKeys(query.after, query.lo) >= 0;
  const [a, b, c] = [first, first + 1, first + 2];
  return [
    `key ${useAfter ? '>' : '>='} $${a} AND key < $${b} AND tomb_at IS NULL AND (exp IS NULL OR exp > $${c})`,
    [useAfter ? query.after : query.lo, query.hi, query.now],
  ];
}

/** A record from its stored JSON text; text that is not a record is CORRUPT_RECORD for `key`. */
export const decode = decodeRecord;
