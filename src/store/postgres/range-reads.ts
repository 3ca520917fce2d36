// Range reads inside one Postgres transaction: the ones asked for together travel in one round trip; ranges fetched
// with the transaction's BEGIN cost none.
import type pg from 'pg';
import type { KnownRecords } from '../known-records.js';
import type { KeyRange, RangeQuery, StoredRecord } from '../types.js';
import { listedRecords, type ReadRow, readRows, SIZED_COLUMNS, type SizedRow } from './known-rows.js';
import type { Tables } from './schema.js';
import { lit, num, rangeWhere } from './sql.js';

type Rows = Array<[string, StoredRecord]>;
type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

/** How many rows of a range the transaction's first round trip fetches: a range with fewer came whole. */
const FIRST_ROWS = 1000;

/** A row of a range fetched with BEGIN: a {@link SizedRow} and its expiry (the transaction's clock is not known yet). */
export type RangedRow = SizedRow & { exp: number | null };

/** A key range fetched with the transaction's BEGIN, with its rows (tombstones left out, expired ones not yet). */
export type ListedRange = KeyRange & { rows: RangedRow[] };

/** The statement that fetches a range with BEGIN, its bounds written in. */
export const rangeRowsOf = (t: Tables, range: KeyRange): string =>
  `SELECT ${SIZED_COLUMNS}, exp FROM ${t.records} WHERE key >= ${lit(range.lo)} AND key < ${lit(range.hi)} AND tomb_at IS NULL
    ORDER BY key LIMIT ${FIRST_ROWS}`;

/** A statement parameter written into the statement's text. */
function literal(value: unknown): string {
  if (typeof value === 'string') return lit(value);
  if (typeof value === 'number') return num(value);
  throw new Error(`not a text or a number: ${String(value)}`);
}

/**
 * The range reads of one transaction. Those asked for in the same turn of the event loop (a checkpoint reading every
 * key range of a thread at once) go as one multi-statement query, one round trip; a lone one is one parameterized
 * statement. Every statement sees the same state: the transaction holds the store's lock. Large records this process
 * knows are taken as it holds them; the others are read whole in one more round trip.
 */
export class RangeReads {
  private pending: Array<{ query: RangeQuery; resolve: (rows: Rows) => void; reject: (error: unknown) => void }> = [];

  constructor(
    private readonly t: Tables,
    private readonly q: Query,
    private readonly known: KnownRecords,
    private readonly readWhole: (keys: string[]) => Promise<Map<string, string>>,
    private readonly listed: ListedRange[] = [],
  ) {}

  read = (query: RangeQuery): Promise<Rows> => {
    const fetched = this.fetched(query);
    if (fetched !== undefined) return readRows(fetched, this.known, this.readWhole).then((rows) => listedRecords(rows, this.known));
    return new Promise<Rows>((resolve, reject) => {
      this.pending.push({ query, resolve, reject });
      if (this.pending.length === 1) queueMicrotask(() => void this.flush());
    });
  };

  /**
   * The rows of `query` from a range fetched with BEGIN, if it is one read from its start and that range came whole:
   * the live ones at the query's clock, as many as it asks for.
   */
  private fetched(query: RangeQuery): SizedRow[] | undefined {
    if (query.after !== undefined) return undefined;
    const range = this.listed.find((r) => r.lo === query.lo && r.hi === query.hi && r.rows.length < FIRST_ROWS);
    if (range === undefined) return undefined;
    return range.rows.filter((row) => row.exp === null || row.exp > query.now).slice(0, query.limit);
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0);
    try {
      let found: SizedRow[][];
      if (batch.length === 1) {
        const [where, params] = rangeWhere(batch[0].query, 2);
        const sql = `SELECT ${SIZED_COLUMNS} FROM ${this.t.records} WHERE ${where} ORDER BY key LIMIT $1`;
        found = [(await this.q<SizedRow>(sql, [batch[0].query.limit, ...params])).rows];
      } else {
        const statements = batch.map(({ query }) => {
          const [where, params] = rangeWhere(query, 1);
          const written = where.replace(/\$(\d+)/g, (_, n: string) => literal(params[Number(n) - 1]));
          return `SELECT ${SIZED_COLUMNS} FROM ${this.t.records} WHERE ${written} ORDER BY key LIMIT ${literal(query.limit)}`;
        });
        const reply: unknown = await this.q<SizedRow>(statements.join(';\n')); // one result per statement
        found = (reply as Array<pg.QueryResult<SizedRow>>).map((result) => result.rows);
      }
      // The large rows no statement could take from memory are read whole together.
      const rows = await readRows(found.flat(), this.known, this.readWhole);
      const byKey = new Map(rows);
      for (const [i, { resolve }] of batch.entries()) {
        const mine = found[i].filter((row) => byKey.has(row.key)).map((row): [string, ReadRow] => [row.key, byKey.get(row.key)!]);
        resolve(listedRecords(mine, this.known));
      }
    } catch (error) {
      for (const { reject } of batch) reject(error);
    }
  }
}
