// What a transaction reads through on the SQLite writer connection: the rows of the batch's open transaction, a large
// record by its size and last bytes first, taken from the committed texts this process holds when it is one of them.
import type { BackendTx, StoredRecord } from '../types.js';
import { RecordTexts } from './record-texts.js';
import { decode, decodeForWrite, range, type SizedRow, type WriterStatements } from './schema.js';

/**
 * The reads of a batch's transactions. A text is remembered only when it is known to be committed: read at a revision
 * the batch started above, or written by a transaction of a batch that committed.
 */
export class TxReads {
  private readonly texts = new RecordTexts();
  /** the revision the batch being run started from: a row at or below it was committed before the batch */
  private batchStart = 0;

  constructor(private readonly w: WriterStatements) {}

  readonly reads: BackendTx = {
    get: async (key) => {
      const row = this.w.getSized.get(key);
      if (row === undefined) return undefined;
      const { text, whole } = this.textOf(row);
      const record = decodeForWrite(key, text);
      if (whole) this.rememberRead(key, text, record);
      return record;
    },
    list: async (query) => {
      const out: Array<[string, StoredRecord]> = [];
      for (const row of range(this.w, query)) {
        const { text, whole } = this.textOf(row);
        const record = decode(text); // a corrupt row is skipped in listings
        if (record === undefined) continue;
        if (whole) this.rememberRead(row.key, text, record);
        out.push([row.key, record]);
      }
      return out;
    },
  };

  /** A batch begins, its transaction open at `revision`. */
  begin(revision: number): void {
    this.batchStart = revision;
  }

  /** A batch committed: the texts its transactions wrote, by key (`null`: removed), in the order they wrote them. */
  committed(texts: Iterable<[string, string | null]>): void {
    for (const [key, text] of texts) {
      if (text === null) this.texts.forget(key);
      else this.texts.remember(key, text);
    }
  }

  /** A row's text: as read, remembered, or read whole now (`whole`: a large text read from the file). */
  private textOf(row: SizedRow): { text: string; whole: boolean } {
    if (row.value !== null) return { text: row.value, whole: false };
    const known = this.texts.find(row.key, row.bytes, row.tail!);
    if (known !== undefined) return { text: known, whole: false };
    // The same transaction: the same row.
    return { text: this.w.get.get(row.key)!.value, whole: true };
  }

  /** Remembers a large text a transaction read, if it was committed before the batch (not an earlier job's write). */
  private rememberRead(key: string, text: string, record: StoredRecord): void {
    if (record.rev <= this.batchStart) this.texts.remember(key, text);
  }
}
