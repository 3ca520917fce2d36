// The default backend: one SQLite file on better-sqlite3, shared safely by any number of processes on one machine.
import type Database from 'better-sqlite3';
import type Keyv from 'keyv';
import { corrupt, ENVELOPE_PREFIX, isRecord } from '../codec.js';
import type { KeyvSqlite } from './keyv-sqlite.js';
import { databaseFile, type FileIdentityCheck, NotifyFile, shrinkWal } from './files.js';
import { SqliteCommitListener } from './listener.js';
import { isBusy, openDatabase, type ReaderStatements, type WriterStatements, writeRows } from './schema.js';
import { KnownRecords, type WrittenRow } from '../known-records.js';
import { SizedReads } from './sized-reads.js';
import { TxReads } from './tx-reads.js';
import type { Backend, BackendTx, ChangeQuery, ChangeRow, CommitEvent, RangeQuery, StoredRecord, TxContext, Writes } from '../types.js';

/** How the SQLite backend waits, syncs and listens. */
export interface SqliteOptions {
  /** How long a transaction waits for another process's write lock before STORE_UNAVAILABLE (default 10 s). */
  busyTimeoutMs?: number;
  /** `FULL` fsyncs the WAL on every commit (survives power loss); `NORMAL` survives process crashes and `kill -9`. */
  synchronous?: 'FULL' | 'NORMAL';
  /**
   * While somebody listens for other processes' commits: how often the change log is read even if no change
   * notification came (for filesystems where watching a file does not work). Default 1000 ms.
   */
  pollMs?: number;
  /**
   * Records whose stored text is at least this many bytes are kept parsed (frozen) once committed, and a transaction
   * reading one again takes it from memory (default 16 KiB; tests lower it to run every read through that path).
   */
  knownFromBytes?: number;
}

/**
 * The SQLite backend. Two connections to one WAL-mode file: a reader (single records through Keyv over {@link KeyvSqlite}
 * or by size first; ranges, the change log, the revision), which sees only committed data, and a writer for all writes.
 *
 * Everything runs synchronously on better-sqlite3 — no thread-pool hops — except the waits, which never block the
 * event loop: SQLite's busy timeout is 0 and a connection that meets another process's lock retries after a jittered
 * pause in JS.
 *
 * Writes are **group-committed**: transactions requested while another batch is being committed, or in the same turn
 * of the event loop, run one after another inside one `BEGIN IMMEDIATE … COMMIT` (one fsync), each inside its own
 * SAVEPOINT so that one that fails undoes only its own writes, and each seeing the writes of those before it. Each
 * writing transaction still gets its own revision; results and errors stay per call.
 *
 * After each commit the writer writes one byte (no fsync) to a notify file beside the database; a backend with
 * `onForeignCommit` listeners watches that file and reads the change log since the last revision it saw, so other
 * processes' commits reach it in about a millisecond without anybody polling while idle.
 */
export class SqliteBackend implements Backend {
  readonly description: string;
  readonly shared = true;

  private readonly commits: SqliteCommitListener;
  private readonly notify: NotifyFile;

  private queue: Job[] = [];
  private flushing?: Promise<void>;
  private closed = false;
  /** the large committed records this process holds, frozen; transactions (writer) and plain reads (reader) take them */
  private readonly known: KnownRecords;
  private readonly tx: TxReads;
  private readonly held: SizedReads;

  /** How many SQLite commits this backend has made (each is one fsync in FULL mode), and the transactions in them. */
  readonly stats = { commits: 0, transactions: 0 };

  private constructor(
    readonly path: string,
    private readonly writer: Database.Database,
    private readonly reader: Database.Database,
    private readonly w: WriterStatements,
    private readonly r: ReaderStatements,
    private readonly keyv: Keyv<StoredRecord>,
    private readonly files: FileIdentityCheck,
    notifyPath: string,
    private readonly busyTimeoutMs: number,
    pollMs: number,
    knownFromBytes?: number,
  ) {
    this.description = `sqlite://${path}`;
    // Rows hold Keyv's envelope around the record, which the writer begins with the revision.
    this.known = new KnownRecords(ENVELOPE_PREFIX, knownFromBytes);
    this.tx = new TxReads(w, this.known);
    // The reader sees only committed rows: whatever large record it reads whole may be held.
    this.held = new SizedReads(r, this.known, () => true);
    this.notify = new NotifyFile(notifyPath);
    this.commits = new SqliteCommitListener({ notifyPath, pollMs, reader: r, usable: () => !this.closed && this.files.intact() });
  }

  /** Opens (creating or upgrading) the database at `path`; several processes may do so at once (see {@link openDatabase}). */
  static async open(given: string, options: SqliteOptions = {}): Promise<SqliteBackend> {
    const path = databaseFile(given);
    const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    const db = await openDatabase(path, options.synchronous ?? 'FULL', busyTimeoutMs, options.knownFromBytes);
    return new SqliteBackend(
      path,
      db.writer,
      db.reader,
      db.w,
      db.r,
      db.keyv,
      db.files,
      `${path}-notify`,
      busyTimeoutMs,
      options.pollMs ?? 1000,
      options.knownFromBytes,
    );
  }

  now(): number {
    return Date.now();
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    this.files.checkForRead();
    // A key whose large record this process holds: its row's size and first characters first, not its whole text.
    if (this.known.has(key)) return this.retryBusy(() => this.held.get(key));
    let record: unknown;
    try {
      record = await this.retryBusy(() => this.keyv.get(key));
    } catch (error) {
      if (error instanceof SyntaxError) throw corrupt(key);
      throw error;
    }
    if (record === undefined) return undefined;
    if (!isRecord(record)) throw corrupt(key);
    return record;
  }

  async list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    this.files.checkForRead();
    return this.retryBusy(() => this.r.snapshot(() => ({ rows: this.held.list(query), revision: this.r.revision.get()!.value })));
  }

  async revision(): Promise<number> {
    this.files.checkForRead();
    return this.retryBusy(() => this.r.revision.get()!.value);
  }

  transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
  ): Promise<{ result: T; revision: number }> {
    return this.enqueue(async (revision) => {
      const now = Date.now();
      const { result, writes } = await fn(this.tx.reads, { revision, now });
      if (writes.size === 0) return { value: { result, revision }, revision };
      const next = revision + 1;
      const written = writeRows(this.w, writes, next, now);
      return { value: { result, revision: next }, revision: next, written };
    });
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    this.files.checkForRead();
    return this.retryBusy(() => this.r.due.all(query.now, query.tombstonesBefore, query.limit).map((row) => row.key));
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    this.files.checkForRead();
    return this.retryBusy(() =>
      this.r.snapshot(() => ({
        changes: this.r.changes.all(query.after, query.lo, query.hi, query.limit).map((row) => ({
          revision: row.revision,
          key: row.key,
          version: row.version,
          deleted: row.deleted === 1,
        })),
        revision: this.r.revision.get()!.value,
        compacted: this.r.compacted.get()!.value,
      })),
    );
  }

  pruneChanges(before: number, limit: number): Promise<number> {
    return this.enqueue(async (revision) => {
      const pruned = this.w.prune.all(before, limit);
      if (pruned.length > 0) this.w.raiseCompacted.run(Math.max(...pruned.map((row) => row.revision)));
      return { value: pruned.length, revision };
    });
  }

  onForeignCommit(listener: (event: CommitEvent) => void): () => void {
    return this.commits.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.commits.close();
    this.notify.wake();
    await this.flushing;
    for (const job of this.queue.splice(0)) job.reject(new Error('The store was closed.'));
    this.notify.close();
    this.reader.close();
    this.writer.close();
  }

  // --- transactions -----------------------------------------------------------------------------------------------

  private enqueue<T>(run: Job['run']): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closed) return reject(new Error('The store was closed.'));
      if (this.files.gone) return reject(this.files.gone);
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      // Start on the next turn of the event loop, so every transaction asked for in this turn joins the batch.
      this.flushing ??= new Promise<void>((done) => setImmediate(() => void this.flush().finally(done)));
    });
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        try {
          // While this waits for another process's lock, newly asked-for transactions join the batch.
          await this.begin();
        } catch (error) {
          for (const job of this.queue.splice(0)) job.reject(error);
          continue;
        }
        await this.runBatch(this.queue.splice(0));
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /**
   * Takes the write lock (`BEGIN IMMEDIATE`). SQLite does not wait for it (busy timeout 0, so the event loop is never
   * blocked); another process holding it is waited for here with jittered pauses, up to the busy timeout, after
   * which SQLITE_BUSY surfaces (as STORE_UNAVAILABLE). Then checks that the files are still the ones opened.
   */
  private async begin(): Promise<void> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      if (this.files.gone) throw this.files.gone;
      if (this.closed) throw new Error('The store was closed.');
      try {
        this.w.begin.run();
        break;
      } catch (error) {
        if (!isBusy(error) || Date.now() > deadline) {
          this.notify.stopLockWatch();
          throw error;
        }
      }
      await this.notify.lockReleased(Math.min(16, 2 ** Math.min(attempt, 4)) * (0.5 + Math.random()));
    }
    this.notify.stopLockWatch();
    try {
      this.files.check();
    } catch (error) {
      this.w.rollback.run();
      throw error;
    }
  }

  private async runBatch(jobs: Job[]): Promise<void> {
    let start: number;
    try {
      start = this.w.revision.get()!.value;
    } catch (error) {
      if (this.writer.inTransaction) this.w.rollback.run();
      for (const job of jobs) job.reject(error);
      return;
    }
    this.tx.begin(start);
    let revision = start;
    const done: Array<[Job, unknown, WrittenRow[] | undefined]> = [];
    let aborted: unknown;
    // A batch of one needs no savepoint: if it fails, rolling the whole transaction back undoes the same writes.
    const alone = jobs.length === 1;
    for (const [i, job] of jobs.entries()) {
      try {
        if (!alone) this.w.savepoint.run();
        const out = await job.run(revision);
        if (!alone) this.w.release.run();
        revision = out.revision;
        done.push([job, out.value, out.written]);
      } catch (error) {
        if (this.writer.inTransaction && !alone) {
          try {
            this.w.rollbackTo.run();
            this.w.release.run();
            job.reject(error);
            continue;
          } catch {
            // the savepoint is not there any more: give the whole batch up below
          }
        }
        // SQLite rolled the whole transaction back (I/O error, disk full): nothing of the batch survives.
        aborted = error;
        for (const later of jobs.slice(i)) later.reject(error);
        break;
      }
    }
    if (aborted === undefined) {
      try {
        if (revision !== start) this.w.setRevision.run(revision);
        this.w.commit.run();
        this.stats.commits++;
        this.stats.transactions += done.length;
        if (this.stats.commits % 16 === 0) shrinkWal(this.writer, `${this.path}-wal`); // (a stat: not on every commit)
      } catch (error) {
        aborted = error;
      }
    }
    if (aborted !== undefined) {
      try {
        if (this.writer.inTransaction) this.w.rollback.run();
      } catch {
        // nothing more can be done; the connection reports its state on the next call
      }
      for (const [job] of done) job.reject(aborted);
      return;
    }
    // What the batch wrote is committed now: large records are known, other written keys forgotten.
    for (const [, , written] of done) this.tx.committed(written ?? []);
    // Tells watchers of other processes about the commit, and their lock waiters that the lock is free.
    this.notify.ring();
    // Our own commits need not be read back from the change log when nobody else committed in between.
    if (revision !== start) this.commits.ownCommit(start, revision);
    for (const [job, value] of done) job.resolve(value);
  }

  /** Runs a read, retrying after a short pause while another connection briefly holds a lock readers must wait for. */
  private async retryBusy<T>(read: () => T | Promise<T>): Promise<T> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await read();
      } catch (error) {
        if (!isBusy(error) || Date.now() > deadline) throw error;
      }
      await sleep(Math.min(20, 2 ** attempt) * (0.5 + Math.random()));
    }
  }
}

interface Job {
  /**
   * Runs inside the batch's transaction, starting from `revision`; returns its value, the revision after it, and what
   * it wrote by key.
   */
  run(revision: number): Promise<{ value: unknown; revision: number; written?: WrittenRow[] }>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
