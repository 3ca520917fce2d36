// What a transaction reads through on the SQLite writer connection: the rows of the batch's open transaction, a large
// record by its size and first characters first, taken as this process already holds it when it is one it knows.
import { KnownRecords, type WrittenRow } from '../known-records.js';
import type { BackendTx, StoredRecord } from '../types.js';
import { decode, decodeForWrite, range, type SizedRow, type WriterStatements } from './schema.js';

/**
 * The reads of a batch's transactions. A record is known only when it is known to be committed: read at a revision the
 * batch started above, or written by a transaction of a batch that committed. A known record comes back frozen.
 */
export class TxReads {
  private readonly known: KnownRecords;
  /** the revision the batch being run started from: a row at or below it was committed before the batch */
  private batchStart = 0;

  constructor(
    private readonly w: WriterStatements,
    knownFromBytes?: number,
  ) {
    // Rows hold Keyv's envelope around the record, which the writer begins with the revision.
    this.known = new KnownRecords('{"value":{"rev":', knownFromBytes);
  }

  readonly reads: BackendTx = {
    get: async (key) => {
      const row = this.w.getSized.get(key);
      if (row === undefined) return undefined;
      const known = this.knownOf(row);
      if (known !== undefined) return known;
      const text = this.textOf(row);
      const record = decodeForWrite(key, text);
      if (row.value === null) this.rememberRead(key, text, record);
      return record;
    },
    list: async (query) => {
      const out: Array<[string, StoredRecord]> = [];
      for (const row of range(this.w, query)) {
        const known = this.knownOf(row);
        if (known !== undefined) {
          out.push([row.key, known]);
          continue;
        }
        const text = this.textOf(row);
        const record = decode(text); // a corrupt row is skipped in listings
        if (record === undefined) continue;
        if (row.value === null) this.rememberRead(row.key, text, record);
        out.push([row.key, record]);
      }
      return out;
    },
  };

  /** A batch begins, its transaction open at `revision`. */
  begin(revision: number): void {
    this.batchStart = revision;
  }

  /** A batch committed: what its transactions wrote, in the order they wrote it. Large records are known from now on. */
  committed(written: Iterable<WrittenRow>): void {
    this.known.committed(written);
  }

  /** The record of a large row, if it is the one this process knows. */
  private knownOf(row: SizedRow): StoredRecord | undefined {
    return row.value === null ? this.known.find(row.key, row.bytes, row.head!) : undefined;
  }

  /** A row's text: as read, or (a large row) read whole now. */
  private textOf(row: SizedRow): string {
    // The same transaction: the same row.
    return row.value ?? this.w.get.get(row.key)!.value;
  }

  /** Knows a large record a transaction read, if it was committed before the batch (not an earlier job's write). */
  private rememberRead(key: string, text: string, record: StoredRecord): void {
    if (record.rev <= this.batchStart) this.known.remember(key, text, record);
  }
}
