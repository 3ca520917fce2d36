// Reads of records outside a transaction: one record, and a listing. A large record this process holds stays in the
// database: one record takes one round trip, in which the row's text comes back only when it is not that record, and a
// listing takes such rows by their size and first characters.
import { HEAD_CHARS, KNOWN_FROM_BYTES, type KnownRecords } from '../known-records.js';
import type { RangeQuery, StoredRecord } from '../types.js';
import type { Connections } from './connections.js';
import { listedRecords, readRows, type SizedRow } from './known-rows.js';
import { tablesGone, type Tables } from './schema.js';
import { decode, rangeWhere } from './sql.js';

/**
 * `key`'s record (tombstones and expired records included; CORRUPT_RECORD when its text is not one). When this process
 * holds a record of `key` read from the tables it knows (`tablesOid`: tables made anew start their revisions over), the
 * row is that record if its text has the held size and begins with the held revision: then its text stays in the
 * database. Any other row of such a key comes whole, is decoded and, when large, held from now on (a read outside a
 * transaction sees only committed rows).
 */
export async function readRecord(
  db: Connections,
  t: Tables,
  known: KnownRecords,
  tablesOid: string | undefined,
  key: string,
): Promise<StoredRecord | undefined> {
  const held = tablesOid === undefined ? undefined : known.expected(key);
  if (held === undefined) {
    const { rows } = await db.readPrepared<{ record: string }>(`SELECT record FROM ${t.records} WHERE key = $1`, [key]);
    return rows.length > 0 ? decode(key, rows[0].record) : undefined;
  }
  const { rows } = await db.readPrepared<{ record: string | null }>(
    `SELECT CASE WHEN octet_length(r.record) = $2 AND left(r.record, $3) = $4 AND m.tableoid::int8::text = $5
              THEN NULL ELSE r.record END AS record
       FROM ${t.records} r, ${t.meta} m WHERE r.key = $1 AND m.id = 1`,
    [key, held.bytes, held.head.length, held.head, tablesOid],
  );
  if (rows.length === 0) return undefined;
  const text = rows[0].record;
  if (text === null) return known.find(key, held.bytes, held.head) ?? held.record;
  const record = decode(key, text);
  known.remember(key, text, record);
  return record;
}

/** Attempts at a listing whose large rows changed before their texts came; the last one reads every row whole. */
const LIST_ATTEMPTS = 3;

/** A large row changed between a listing and the fetch of its text: the listing runs again. */
const CHANGED = Symbol('changed');

type ListedRow = { revision: string; oid: string; key: string | null; record: string | null; bytes: number | null };

/**
 * The live records of `query` and the revision they were read at, as one snapshot. Large rows come by their size and
 * first characters: one this process holds is taken from memory; the others are fetched whole in one more round trip
 * ({@link readRows}, as in a transaction) and taken when each is still the row the listing saw (the same size, and
 * first characters naming the same revision), then held; when one changed meanwhile the listing runs again, its last
 * attempt reading every row whole. Every read shares the call's time. `adopt(oid)` is told which tables were read
 * first (the caller forgets what it holds when they were made anew). A corrupt row is skipped (reading that key
 * reports it).
 */
export async function listRecords(
  db: Connections,
  t: Tables,
  known: KnownRecords,
  adopt: (oid: string) => void,
  query: RangeQuery,
): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
  const deadline = db.deadline();
  const [where, params] = rangeWhere(query, 2);
  for (let attempt = 1; ; attempt++) {
    // A row under the size comes whole (`bytes` null); a larger one as its size and first characters.
    const columns =
      attempt < LIST_ATTEMPTS
        ? `key, CASE WHEN octet_length(record) < ${KNOWN_FROM_BYTES} THEN record ELSE left(record, ${HEAD_CHARS}) END AS record,
             CASE WHEN octet_length(record) >= ${KNOWN_FROM_BYTES} THEN octet_length(record) END AS bytes`
        : 'key, record, NULL::int AS bytes';
    const { rows } = await db.readPrepared<ListedRow>(
      `SELECT m.revision, m.tableoid::int8::text AS oid, r.key, r.record, r.bytes FROM ${t.meta} m
         LEFT JOIN LATERAL (SELECT ${columns} FROM ${t.records} WHERE ${where} ORDER BY key LIMIT $1) r ON true
        WHERE m.id = 1 ORDER BY r.key`,
      [query.limit, ...params],
      deadline,
    );
    if (rows.length === 0) throw tablesGone(t);
    adopt(rows[0].oid);
    const sized = new Map<string, SizedRow>();
    for (const { key, record, bytes } of rows) {
      if (key === null || record === null) continue;
      sized.set(key, bytes === null ? { key, record, bytes: 0, head: null } : { key, record: null, bytes: Number(bytes), head: record });
    }
    // Outside a transaction a row may change between two statements: its text is taken only if it is the row listed.
    const readWhole = async (keys: string[]): Promise<Map<string, string>> => {
      const { rows: fetched } = await db.readPrepared<{ key: string; record: string }>(
        `SELECT key, record FROM ${t.records} WHERE key = ANY($1)`,
        [keys],
        deadline,
      );
      const texts = new Map(fetched.map((row) => [row.key, row.record]));
      for (const key of keys) {
        const { bytes, head } = sized.get(key)!;
        const text = texts.get(key);
        if (text?.startsWith(head!) !== true || Buffer.byteLength(text, 'utf8') !== bytes) throw CHANGED;
      }
      return texts;
    };
    try {
      return { rows: listedRecords(await readRows([...sized.values()], known, readWhole), known), revision: Number(rows[0].revision) };
    } catch (error) {
      if (error !== CHANGED) throw error;
    }
  }
}
