// The default backend: one SQLite file on better-sqlite3, shared safely by any number of processes on one machine.
import { closeSync, mkdirSync, openSync, statSync, watch, writeSync, constants as fsConstants, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import Keyv from 'keyv';
import { BlackboardError } from '../errors.js';
import { corrupt, deserialize, isRecord, serialize } from './codec.js';
import { KeyvSqlite } from './keyv-sqlite.js';
import {
  TABLE,
  decodeForWrite,
  decodeRows,
  migrate,
  range,
  readerStatements,
  writerStatements,
  type ReaderStatements,
  type WriterStatements,
} from './sqlite-schema.js';
import type {
  Backend,
  BackendTx,
  ChangeQuery,
  ChangeRow,
  CommitEvent,
  RangeQuery,
  StoredRecord,
  TxContext,
  Writes,
} from './types.js';

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
}

/** How often a read re-checks the files' identity (writes check every time). */
const READ_IDENTITY_MS = 1000;
/** Change log rows read per query when catching up with other processes' commits. */
const CATCH_UP_ROWS = 1000;

/**
 * The SQLite backend. Two connections to one WAL-mode file: a reader (Keyv over {@link KeyvSqlite}, plus range,
 * change log and revision queries), which only ever sees committed data, and a writer that owns every write.
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

  private readonly listeners = new Set<(event: CommitEvent) => void>();
  private watcher?: FSWatcher;
  private poller?: NodeJS.Timeout;
  /** the highest revision whose logged changes the listeners have been given */
  private seen = 0;

  private queue: Job[] = [];
  /** while waiting for another process's write lock: a watch on the notify file, and the wait it ends */
  private lockWatcher?: FSWatcher;
  private lockWake?: () => void;
  private flushing?: Promise<void>;
  private closed = false;
  private notifyFd?: number;
  private readonly notifyByte = Buffer.from([0x2a]);

  /** set once a file was found removed or replaced: every later call fails with it */
  private gone?: BlackboardError;
  private lastIdentityCheck = 0;

  /** How many SQLite commits this backend has made (each is one fsync in FULL mode), and the transactions in them. */
  readonly stats = { commits: 0, transactions: 0 };

  private constructor(
    readonly path: string,
    private readonly writer: Database.Database,
    private readonly reader: Database.Database,
    private readonly w: WriterStatements,
    private readonly r: ReaderStatements,
    private readonly keyv: Keyv<StoredRecord>,
    private readonly identity: FileIdentity[],
    private readonly notifyPath: string,
    private readonly busyTimeoutMs: number,
    private readonly pollMs: number,
  ) {
    this.description = `sqlite://${path}`;
    this.lastIdentityCheck = performance.now();
    try {
      this.notifyFd = openSync(notifyPath, fsConstants.O_WRONLY | fsConstants.O_CREAT, 0o644);
    } catch {
      // Not fatal: other processes then fall back to their slow poll.
    }
  }

  /**
   * Opens (creating or upgrading) the database at `path`. Several processes may open a new or old file at once:
   * schema creation and migration happen in one `BEGIN IMMEDIATE` transaction that only one of them gets at a time,
   * the others retry after a random pause and then find the work done.
   */
  static async open(path: string, options: SqliteOptions = {}): Promise<SqliteBackend> {
    mkdirSync(dirname(path), { recursive: true });
    const busyTimeoutMs = options.busyTimeoutMs ?? 10_000;
    const deadline = Date.now() + busyTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      let writer: Database.Database | undefined;
      let reader: Database.Database | undefined;
      try {
        writer = new Database(path, { timeout: 0 });
        writer.pragma('journal_mode = WAL');
        migrate(writer);
        writer.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
        const w = writerStatements(writer);
        reader = new Database(path, { timeout: 0 });
        const r = readerStatements(reader);
        const adapter = new KeyvSqlite({ db: reader, table: TABLE, keySize: 4096 });
        const keyv = new Keyv<StoredRecord>({
          store: adapter,
          namespace: undefined,
          useKeyPrefix: false,
          serialize,
          deserialize,
          throwOnErrors: true,
        });
        keyv.on('error', () => {}); // failures surface as rejected calls; an unheard 'error' event would crash
        // Both connections have read the database in WAL mode, so the -wal and -shm files exist and stay for as
        // long as either connection is open: record which files they are.
        r.revision.get();
        const identity = [path, `${path}-wal`, `${path}-shm`].map(identify);
        return new SqliteBackend(path, writer, reader, w, r, keyv, identity, `${path}-notify`, busyTimeoutMs, options.pollMs ?? 1000);
      } catch (error) {
        reader?.close();
        writer?.close();
        if (!isBusy(error) || Date.now() > deadline) throw error;
        await sleep(Math.min(200, 5 * 2 ** attempt) * (0.5 + Math.random()));
      }
    }
  }

  now(): number {
    return Date.now();
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    this.checkForRead();
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
    this.checkForRead();
    return this.retryBusy(() => this.r.snapshot(() => ({ rows: decodeRows(range(this.r, query)), revision: this.r.revision.get()!.value })));
  }

  async revision(): Promise<number> {
    this.checkForRead();
    return this.retryBusy(() => this.r.revision.get()!.value);
  }

  transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
  ): Promise<{ result: T; revision: number }> {
    return this.enqueue(async (revision) => {
      const now = Date.now();
      const { result, writes } = await fn(this.txReads, { revision, now });
      if (writes.size === 0) return { value: { result, revision }, revision };
      const next = revision + 1;
      for (const [key, write] of writes) {
        if (write.record === null) {
          this.w.remove.run(key);
          continue;
        }
        const record: StoredRecord = { ...write.record, rev: next };
        this.w.put.run({
          key,
          value: serialize({ value: record }),
          exp: record.exp ?? null,
          delAt: record.del === 1 ? record.at : null,
        });
        if (write.log) this.w.log.run(next, key, record.ver, record.del === 1 ? 1 : 0, now);
      }
      return { value: { result, revision: next }, revision: next };
    });
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    this.checkForRead();
    return this.retryBusy(() => this.r.due.all(query.now, query.tombstonesBefore, query.limit).map((row) => row.key));
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    this.checkForRead();
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
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.startListening();
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stopListening();
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    this.stopListening();
    this.lockWake?.();
    await this.flushing;
    for (const job of this.queue.splice(0)) job.reject(new Error('The store was closed.'));
    if (this.notifyFd !== undefined) closeSync(this.notifyFd);
    this.notifyFd = undefined;
    this.reader.close();
    this.writer.close();
  }

  // --- transactions -----------------------------------------------------------------------------------------------

  /** What a transaction function reads through: the writer connection, inside the batch's open transaction. */
  private readonly txReads: BackendTx = {
    get: async (key) => {
      const row = this.w.get.get(key);
      return row === undefined ? undefined : decodeForWrite(key, row.value);
    },
    list: async (query) => decodeRows(range(this.w, query)),
  };

  private enqueue<T>(run: Job['run']): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.closed) return reject(new Error('The store was closed.'));
      if (this.gone) return reject(this.gone);
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
      if (this.gone) throw this.gone;
      if (this.closed) throw new Error('The store was closed.');
      try {
        this.w.begin.run();
        break;
      } catch (error) {
        if (!isBusy(error) || Date.now() > deadline) {
          this.stopLockWatch();
          throw error;
        }
      }
      await this.lockReleased(Math.min(16, 2 ** Math.min(attempt, 4)) * (0.5 + Math.random()));
    }
    this.stopLockWatch();
    try {
      this.checkIdentity();
    } catch (error) {
      this.w.rollback.run();
      throw error;
    }
  }

  /**
   * Resolves when the process holding the write lock may have let it go: its commit touched the notify file (so the
   * next one takes the lock within a fraction of a millisecond, not after a sleep), or after `ms` in any case (a
   * holder that ends without committing, or a filesystem where watching does not work).
   */
  private lockReleased(ms: number): Promise<void> {
    if (!this.lockWatcher) {
      try {
        this.lockWatcher = watch(this.notifyPath, { persistent: false }, () => this.lockWake?.());
        this.lockWatcher.on('error', () => this.stopLockWatch());
      } catch {
        // the timer alone, then
      }
    }
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.lockWake?.(), ms);
      this.lockWake = () => {
        clearTimeout(timer);
        this.lockWake = undefined;
        resolve();
      };
    });
  }

  private stopLockWatch(): void {
    this.lockWatcher?.close();
    this.lockWatcher = undefined;
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
    let revision = start;
    const done: Array<[Job, unknown]> = [];
    let aborted: unknown;
    for (const [i, job] of jobs.entries()) {
      try {
        this.w.savepoint.run();
        const out = await job.run(revision);
        this.w.release.run();
        revision = out.revision;
        done.push([job, out.value]);
      } catch (error) {
        if (this.writer.inTransaction) {
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
    // Tells watchers of other processes about the commit, and their lock waiters that the lock is free.
    this.notifyOthers();
    if (revision !== start) {
      // Our own commits need not be read back from the change log when nobody else committed in between.
      if (this.seen === start) this.seen = revision;
    }
    for (const [job, value] of done) job.resolve(value);
  }

  /** One byte written to the notify file, without fsync: wakes the processes that watch it. */
  private notifyOthers(): void {
    if (this.notifyFd === undefined) return;
    try {
      writeSync(this.notifyFd, this.notifyByte, 0, 1, 0);
    } catch {
      // Watchers still catch up on their slow poll.
    }
  }

  // --- the file identity check ------------------------------------------------------------------------------------

  /**
   * An open SQLite connection keeps using a database, `-wal` or `-shm` file that was deleted or replaced under it:
   * everything it writes then vanishes at the next start (for a `-wal`, earlier acknowledged writes too). Every
   * write transaction checks all three right after taking the write lock (three `stat`s, a few microseconds beside
   * a commit) and refuses with STORE_UNAVAILABLE. Reads only re-check once a second: a read from a file that was just
   * removed still returns what was committed, so there is nothing to lose there, and the hot read path stays free of
   * system calls. Once a change is seen, every later call fails the same way until the server is restarted.
   */
  private checkIdentity(): void {
    if (this.gone) throw this.gone;
    this.lastIdentityCheck = performance.now();
    for (const file of this.identity) {
      const st = statSync(file.path, { throwIfNoEntry: false });
      if (!st || st.dev !== file.dev || st.ino !== file.ino) {
        this.gone = new BlackboardError(
          'STORE_UNAVAILABLE',
          `The database file ${file.path} was removed or replaced while the server was running, so nothing can be read or written safely. Nothing was changed; ask the operator to restore the file and restart the server.`,
          { cause: 'STORE_FILE_GONE' },
        );
        throw this.gone;
      }
    }
  }

  private checkForRead(): void {
    if (this.gone) throw this.gone;
    if (performance.now() - this.lastIdentityCheck > READ_IDENTITY_MS) this.checkIdentity();
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

  // --- other processes' commits -----------------------------------------------------------------------------------

  private startListening(): void {
    try {
      this.seen = this.r.revision.get()!.value;
    } catch {
      this.seen = -1; // the first catch-up then reports a gap
    }
    this.watch();
    this.poller = setInterval(() => {
      if (!this.watcher) this.watch();
      this.catchUp();
    }, this.pollMs);
    this.poller.unref();
  }

  /**
   * Watches the notify file. A file removed or replaced (a `rename` event) is watched again under its name; where
   * watching fails, the poll is all there is (and retries the watch on each tick).
   */
  private watch(): void {
    this.watcher?.close();
    this.watcher = undefined;
    try {
      const watcher = watch(this.notifyPath, { persistent: false }, (event) => {
        if (event === 'rename') this.watch();
        this.catchUp();
      });
      watcher.on('error', () => {
        watcher.close();
        if (this.watcher === watcher) this.watcher = undefined;
      });
      this.watcher = watcher;
    } catch {
      // not watchable here (or not there yet)
    }
  }

  private stopListening(): void {
    this.watcher?.close();
    this.watcher = undefined;
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
  }

  /** Reads the change log since the last revision seen and tells the listeners, one event per commit. */
  private catchUp(): void {
    if (this.listeners.size === 0 || this.closed || this.gone) return;
    const events: CommitEvent[] = [];
    try {
      for (;;) {
        const { rows, revision, compacted } = this.r.snapshot(() => ({
          rows: this.r.since.all(this.seen, CATCH_UP_ROWS),
          revision: this.r.revision.get()!.value,
          compacted: this.r.compacted.get()!.value,
        }));
        if (this.seen < 0 || compacted > this.seen) {
          events.push({ gap: true });
          this.seen = revision;
          break;
        }
        for (const row of rows) {
          const last = events[events.length - 1];
          if (last && 'keys' in last && last.revision === row.revision) last.keys.push(row.key);
          else events.push({ revision: row.revision, keys: [row.key] });
        }
        if (rows.length < CATCH_UP_ROWS) {
          this.seen = Math.max(this.seen, revision);
          break;
        }
        this.seen = rows[rows.length - 1].revision - 1; // re-read the last commit whole if it was cut
        events.pop();
      }
    } catch {
      // Busy or failing: the next notification or poll tick tries again.
    }
    for (const event of events) {
      for (const listener of [...this.listeners]) {
        try {
          listener(event);
        } catch {
          // A listener's failure is its own.
        }
      }
    }
  }
}

interface Job {
  /** Runs inside the batch's transaction, starting from `revision`; returns its value and the revision after it. */
  run(revision: number): Promise<{ value: unknown; revision: number }>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface FileIdentity {
  path: string;
  dev: number;
  ino: number;
}

function identify(path: string): FileIdentity {
  const st = statSync(path);
  return { path, dev: st.dev, ino: st.ino };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const isBusy = (error: unknown): boolean => /^SQLITE_(BUSY|LOCKED)/.test(String((error as { code?: unknown } | null)?.code ?? ''));
