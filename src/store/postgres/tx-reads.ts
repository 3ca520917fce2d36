// What a Postgres transaction reads through, under the store's lock: the keys fetched with BEGIN, more keys in one
// round trip each time, and key ranges (those asked for together in one round trip); large records this process holds
// are taken from memory.
import type pg from 'pg';
import type { KnownRecords } from '../known-records.js';
import type { BackendTx, KeyRange } from '../types.js';
import { type ReadRow, readRows, recordOf, SIZED_COLUMNS, type SizedRow } from './known-rows.js';
import { type ListedRange, type RangedRow, RangeReads, rangeRowsOf } from './range-reads.js';
import { array, lit } from './sql.js';
import type { Tables } from './schema.js';

type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

/** The statement that reads `keys` as {@link SizedRow}s (sent with BEGIN, or alone). */
export const sizedRowsOf = (t: Tables, keys: string): string => `SELECT ${SIZED_COLUMNS} FROM ${t.records} WHERE key = ANY(${keys})`;

/**
 * A transaction's first round trip: BEGIN, its timeouts (`timeouts`, a statement), the store's lock, then (with a
 * snapshot taken after the lock was granted) the clock (`nowMs`, an SQL expression), the transaction's id and its
 * server process (to look its fate up, and end it, if the connection breaks after COMMIT), the prefetched keys and the
 * prefetched ranges, one result each.
 */
export const beginStatement = (t: Tables, keys: string[], ranges: KeyRange[], nowMs: string, timeouts: string): string =>
  [
    'BEGIN ISOLATION LEVEL READ COMMITTED',
    timeouts,
    `SELECT revision, tableoid::int8::text AS oid FROM ${t.meta} WHERE id = 1 FOR UPDATE`,
    `SELECT ${nowMs} AS now, pg_current_xact_id()::text AS xid, pg_postmaster_start_time()::text AS started, pg_backend_pid() AS pid`,
    sizedRowsOf(t, array(keys.map(lit), 'text')),
    ...ranges.map((range) => rangeRowsOf(t, range)),
  ].join(';\n');

/**
 * The reads of one transaction: `keys` and `ranges` were fetched with its BEGIN ({@link beginStatement}), whose results
 * from the keys' on are `results`. Every row it reads is committed: the transaction holds the store's lock, and its own
 * writes go only with its COMMIT.
 */
export async function txReads(
  t: Tables,
  q: Query,
  known: KnownRecords,
  keys: string[],
  ranges: KeyRange[],
  results: pg.QueryResult[],
): Promise<BackendTx> {
  const first = results[0].rows as SizedRow[];
  const listed = ranges.map((range, i): ListedRange => ({ ...range, rows: results[1 + i].rows as RangedRow[] }));
  // Large rows come by size and first characters; the ones this process does not know are read whole.
  const readWhole = async (wanted: string[]): Promise<Map<string, string>> => {
    const sql = `SELECT key, record FROM ${t.records} WHERE key = ANY($1)`;
    return new Map((await q<{ key: string; record: string }>(sql, [wanted])).rows.map((r) => [r.key, r.record]));
  };
  const fetched = new Map<string, ReadRow | null>(keys.map((key) => [key, null])); // null: read, absent
  for (const [key, row] of await readRows(first, known, readWhole)) fetched.set(key, row);
  const tx: BackendTx = {
    get: async (key) => {
      if (!fetched.has(key)) await tx.prefetch!([key]);
      const row = fetched.get(key);
      if (row == null) return undefined;
      const record = recordOf(key, row, known);
      fetched.set(key, record);
      return record;
    },
    prefetch: async (more) => {
      const found = new Map(await readRows((await q<SizedRow>(sizedRowsOf(t, '$1'), [more])).rows, known, readWhole));
      for (const key of more) fetched.set(key, found.get(key) ?? null); // under the store's lock: nothing changes meanwhile
    },
    list: new RangeReads(t, q, known, readWhole, listed).read,
  };
  return tx;
}
