// The files around a SQLite board: its directory, the identity check of the database, -wal and -shm files, and the
// notify file.
import {
  accessSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  realpathSync,
  statSync,
  watch,
  writeSync,
  constants as fsConstants,
  type FSWatcher,
} from 'node:fs';
import { basename, dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { BlackboardError } from '../../errors.js';

/**
 * The database file a path names: a symbolic link is followed, as SQLite does, which keeps the -wal and -shm files
 * beside the link's target; every file the board checks and watches is then found there too.
 */
export function databaseFile(path: string): string {
  try {
    return lstatSync(path).isSymbolicLink() ? realpathSync(path) : path;
  } catch {
    return path; // missing (created at open) or a dangling link: opening it says what is wrong
  }
}

/**
 * Creates `dir` and its missing parents, one level at a time from the nearest existing one, so a path no directory
 * can be made in fails with the system's error (Node's recursive mkdir loops forever under /proc, for one).
 */
export function makeDirectory(dir: string): void {
  const missing: string[] = [];
  for (let at = dir; !existsSync(at) && dirname(at) !== at; at = dirname(at)) missing.unshift(at);
  for (const path of missing) mkdirSync(path);
}

/**
 * `error` from opening the database at `path`, with the likely cause added when SQLite could not open or write it
 * and the directory is not writable: WAL mode keeps its -wal and -shm files beside the database.
 */
export function explainOpenFailure(path: string, error: unknown): unknown {
  const code = String((error as { code?: unknown } | null)?.code ?? '');
  if (!/^SQLITE_(CANTOPEN|READONLY)/.test(code)) return error;
  const dir = dirname(path);
  try {
    accessSync(dir, fsConstants.W_OK);
    return error;
  } catch (denied) {
    const why = (denied as { code?: string }).code === 'EROFS' ? 'is on a read-only file system' : 'is not writable by this user';
    return Object.assign(
      new Error(
        `${(error as Error).message}: the directory ${dir} ${why}, and SQLite keeps ${basename(path)}-wal and -shm beside the database (WAL mode); give the server a writable directory`,
      ),
      { code },
    );
  }
}

/** How often a read re-checks the files' identity (writes check every time). */
const READ_IDENTITY_MS = 1000;

interface FileIdentity {
  path: string;
  dev: number;
  ino: number;
}

function identify(path: string): FileIdentity {
  const st = statSync(path);
  return { path, dev: st.dev, ino: st.ino };
}

/**
 * An open SQLite connection keeps using a database, `-wal` or `-shm` file that was deleted or replaced under it:
 * everything it writes then vanishes at the next start (for a `-wal`, earlier acknowledged writes too). Every
 * write transaction checks all three right after taking the write lock (three `stat`s, a few microseconds beside
 * a commit) and refuses with STORE_UNAVAILABLE. Reads only re-check once a second: a read from a file that was just
 * removed still returns what was committed, so there is nothing to lose there, and the hot read path stays free of
 * system calls. Once a change is seen, every later call fails the same way until the server is restarted.
 */
export class FileIdentityCheck {
  private readonly files: FileIdentity[];
  private lastCheck: number;
  private failure?: BlackboardError;

  /** Records which files `paths` are now (they must exist). */
  constructor(paths: string[]) {
    this.files = paths.map(identify);
    this.lastCheck = performance.now();
  }

  /** Set once a file was found removed or replaced: every later call fails with it. */
  get gone(): BlackboardError | undefined {
    return this.failure;
  }

  /** Throws STORE_UNAVAILABLE (`STORE_FILE_GONE`) unless every file is still the one recorded. */
  check(): void {
    if (this.failure) throw this.failure;
    this.lastCheck = performance.now();
    for (const file of this.files) {
      const st = statSync(file.path, { throwIfNoEntry: false });
      if (!st || st.dev !== file.dev || st.ino !== file.ino) {
        this.failure = new BlackboardError(
          'STORE_UNAVAILABLE',
          `The database file ${file.path} was removed or replaced while the server was running, so nothing can be read or written safely. Nothing was changed; ask the operator to restore the file and restart the server.`,
          { cause: 'STORE_FILE_GONE' },
        );
        throw this.failure;
      }
    }
  }

  /** Whether the files are still the recorded ones, by {@link checkForRead}'s check (so at most a stat a second). */
  intact(): boolean {
    try {
      this.checkForRead();
      return true;
    } catch {
      return false;
    }
  }

  /** The check before a read: the failure already seen, or a fresh check when the last one is over a second old. */
  checkForRead(): void {
    if (this.failure) throw this.failure;
    if (performance.now() - this.lastCheck > READ_IDENTITY_MS) this.check();
  }
}

/**
 * The notify file beside the database. After each commit the writer writes one byte to it (no fsync); other
 * processes watch it, both to learn of commits and, while waiting for the write lock, to learn that it is free.
 */
export class NotifyFile {
  private fd?: number;
  private readonly byte = Buffer.from([0x2a]);
  /** while waiting for another process's write lock: a watch on the notify file, and the wait it ends */
  private lockWatcher?: FSWatcher;
  private lockWake?: () => void;

  /** Opens (creating) the file at `path` for writing; when that fails, {@link ring} does nothing. */
  constructor(readonly path: string) {
    try {
      this.fd = openSync(path, fsConstants.O_WRONLY | fsConstants.O_CREAT, 0o644);
    } catch {
      // Not fatal: other processes then fall back to their slow poll.
    }
  }

  /** One byte written to the notify file, without fsync: wakes the processes that watch it. */
  ring(): void {
    if (this.fd === undefined) return;
    try {
      writeSync(this.fd, this.byte, 0, 1, 0);
    } catch {
      // Watchers still catch up on their slow poll.
    }
  }

  /**
   * Resolves when the process holding the write lock may have let it go: its commit touched the notify file (so the
   * next one takes the lock within a fraction of a millisecond, not after a sleep), or after `ms` in any case (a
   * holder that ends without committing, or a filesystem where watching does not work).
   */
  lockReleased(ms: number): Promise<void> {
    if (!this.lockWatcher) {
      try {
        this.lockWatcher = watch(this.path, { persistent: false }, () => this.lockWake?.());
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

  /** Ends a pending {@link lockReleased} wait at once. */
  wake(): void {
    this.lockWake?.();
  }

  /** Stops watching for the lock's release (the lock was taken, or the wait given up). */
  stopLockWatch(): void {
    this.lockWatcher?.close();
    this.lockWatcher = undefined;
  }

  /** Closes the file, and the watch of a lock wait that the close cut short. */
  close(): void {
    this.stopLockWatch();
    this.lockWake?.();
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Past this size the -wal file is copied back into the database and truncated (see {@link shrinkWal}). */
const WAL_LIMIT_BYTES = 16 * 1024 * 1024;

/**
 * SQLite's automatic checkpoints (every 1000 pages, PASSIVE) copy the WAL back, but only a writer that begins after
 * one completed starts the WAL over; with several processes writing and reading all the time that moment never
 * comes, and the -wal file grew without end (500 MB in 2.5 minutes of six busy processes). Once it passes
 * {@link WAL_LIMIT_BYTES}, a committer asks for a TRUNCATE checkpoint without waiting (the writer's busy timeout is 0): it completes
 * at a moment no other connection is reading or writing, else it copies what it can and a later commit tries again.
 */
export function shrinkWal(db: Database.Database, walPath: string): void {
  try {
    if ((statSync(walPath, { throwIfNoEntry: false })?.size ?? 0) >= WAL_LIMIT_BYTES) db.pragma('wal_checkpoint(TRUNCATE)');
  } catch {
    // busy or failing: a later commit tries again
  }
}
