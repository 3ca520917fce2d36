// Rows read by size first, on either connection: a large row's size and first characters, then the record this
// process holds for it when they name that record, else the row read whole, parsed and (when it may be) held.
import type { KnownRecords } from '../known-records.js';
import type { RangeQuery, StoredRecord } from '../types.js';
import { decodeEnvelope } from '../codec.js';
import { decode, range, type SizedRow, type SizedStatements } from './schema.js';

/**
 * Reads through one connection's {@link SizedStatements}. A large record read whole is held from then on when `mayHold`
 * says it was committed (the caller knows: the reader only ever sees committed rows, a batch's transaction also its
 * own). What is held comes back frozen, all the way down.
 */
export class SizedReads {
  constructor(
    private readonly statements: SizedStatements,
    private readonly known: KnownRecords,
    private readonly mayHold: (record: StoredRecord) => boolean,
  ) {}

  /**
   * `key`'s record (tombstones and expired records included). A corrupt row is reported as such (`CORRUPT_RECORD`),
   * which lets a transaction overwrite or delete it instead of failing every write to that key.
   */
  get(key: string): StoredRecord | undefined {
    const row = this.statements.getSized.get(key);
    if (row === undefined) return undefined;
    return this.held(row) ?? this.whole(row, (text) => decodeEnvelope(key, text));
  }

  /** The live rows of `query`'s range, in key order; a corrupt row is left out. */
  list(query: RangeQuery): Array<[string, StoredRecord]> {
    const out: Array<[string, StoredRecord]> = [];
    for (const row of range(this.statements, query)) {
      const record = this.held(row) ?? this.whole(row, decode);
      if (record !== undefined) out.push([row.key, record]);
    }
    return out;
  }

  /** The record of a large row, if it is the one this process holds. */
  private held(row: SizedRow): StoredRecord | undefined {
    return row.value === null ? this.known.find(row.key, row.bytes, row.head!) : undefined;
  }

  /** A row's record from its text: as read, or (a large row) read whole now, and then held if it may be. */
  private whole<R extends StoredRecord | undefined>(row: SizedRow, parse: (text: string) => R): R | undefined {
    if (row.value !== null) return parse(row.value);
    // On the same connection and in the same statement order: the same row, unless another commit came between two
    // statements outside a transaction (then it is that later row, gone or not).
    const text = this.statements.get.get(row.key)?.value;
    if (text === undefined) return undefined;
    const record = parse(text);
    if (record !== undefined && this.mayHold(record)) this.known.remember(row.key, text, record);
    return record;
  }
}
