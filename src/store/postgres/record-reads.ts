// A read of one record outside a transaction. A key whose large record this process holds takes one round trip too,
// in which the row's text comes back only when it is not that record.
import type { KnownRecords } from '../known-records.js';
import type { StoredRecord } from '../types.js';
import type { Connections } from './connections.js';
import type { Tables } from './schema.js';
import { decode } from './sql.js';

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
