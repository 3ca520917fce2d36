// What a transaction reads through on the SQLite writer connection: the rows of the batch's open transaction, a large
// record by its size and first characters first, taken as this process already holds it when it is one it knows.
import type { KnownRecords, WrittenRow } from '../known-records.js';
import type { BackendTx } from '../types.js';
import type { WriterStatements } from './schema.js';
import { SizedReads } from './sized-reads.js';

/**
 * The reads of a batch's transactions. A record is held only when it is known to be committed: read at a revision the
 * batch started above, or written by a transaction of a batch that committed. A held record comes back frozen.
 */
export class TxReads {
  /** the revision the batch being run started from: a row at or below it was committed before the batch */
  private batchStart = 0;
  private readonly rows: SizedReads;

  constructor(
    w: WriterStatements,
    private readonly known: KnownRecords,
  ) {
    this.rows = new SizedReads(w, known, (record) => record.rev <= this.batchStart);
  }

  readonly reads: BackendTx = {
    get: async (key) => this.rows.get(key),
    list: async (query) => this.rows.list(query),
  };

  /** A batch begins, its transaction open at `revision`. */
  begin(revision: number): void {
    this.batchStart = revision;
  }

  /** A batch committed: what its transactions wrote, in the order they wrote it. Large records are held from now on. */
  committed(written: Iterable<WrittenRow>): void {
    this.known.committed(written);
  }
}
