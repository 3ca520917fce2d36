// The SQLite backend's commit listener: the notify file watched, a safety poll, and catch-up from the change log.
import { watch, type FSWatcher } from 'node:fs';
import type { ReaderStatements } from './schema.js';
import type { CommitEvent } from '../types.js';

/** Change log rows read per query when catching up with other processes' commits. */
const CATCH_UP_ROWS = 1000;

/** What the SQLite commit listener watches and reads. */
export interface SqliteListenerOptions {
  /** the notify file that every process's writer touches after a commit */
  notifyPath: string;
  /** how often the change log is read even if no change notification came, ms */
  pollMs: number;
  /** the reader connection's statements: the change log, revision and compaction mark are read through them */
  reader: ReaderStatements;
  /**
   * false once the backend is closed or its files are gone (checked now and then): then nothing more is read, and
   * the listeners are told once, as a gap, so that a wait in progress reads again and learns it
   */
  usable(): boolean;
}

/**
 * Serves a SQLite backend's `onForeignCommit`. While somebody listens, it watches the notify file and, on each
 * change (and on a safety poll, for filesystems where watching does not work), reads the change log since the last
 * revision it saw and tells the listeners, one event per commit. Nobody listening: no watcher, no timer, no reads.
 */
export class SqliteCommitListener {
  private readonly listeners = new Set<(event: CommitEvent) => void>();
  private watcher?: FSWatcher;
  private poller?: NodeJS.Timeout;
  /** the highest revision whose logged changes the listeners have been given */
  private seen = 0;
  /** the listeners were told that the backend stopped being usable */
  private toldUnusable = false;

  constructor(private readonly options: SqliteListenerOptions) {}

  /** Adds a listener (the first one starts listening); returns the function that removes it (the last one stops). */
  subscribe(listener: (event: CommitEvent) => void): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this.startListening();
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stopListening();
    };
  }

  /**
   * This process committed, taking the revision from `start` to `revision`. Our own commits need not be read back
   * from the change log when nobody else committed in between.
   */
  ownCommit(start: number, revision: number): void {
    if (this.seen === start) this.seen = revision;
  }

  /** Drops every listener and stops listening. */
  close(): void {
    this.listeners.clear();
    this.stopListening();
  }

  private startListening(): void {
    try {
      this.seen = this.options.reader.revision.get()!.value;
    } catch {
      this.seen = -1; // the first catch-up then reports a gap
    }
    this.watch();
    this.poller = setInterval(() => {
      if (!this.watcher) this.watch();
      this.catchUp();
    }, this.options.pollMs);
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
      const watcher = watch(this.options.notifyPath, { persistent: false }, (event) => {
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
    if (this.listeners.size === 0) return;
    if (!this.options.usable()) {
      // a wait would otherwise go on to its end before it learns that the database file was removed or replaced
      if (!this.toldUnusable) this.tell([{ gap: true }]);
      this.toldUnusable = true;
      return;
    }
    const r = this.options.reader;
    const events: CommitEvent[] = [];
    // the last row read when a page came full: the next page starts after it, within the same commit if it was cut
    let after: { revision: number; key: string } | undefined;
    try {
      for (;;) {
        const { rows, revision, compacted } = r.snapshot(() => ({
          rows: after ? r.sinceRow.all(after.revision, after.key, CATCH_UP_ROWS) : r.since.all(this.seen, CATCH_UP_ROWS),
          revision: r.revision.get()!.value,
          compacted: r.compacted.get()!.value,
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
        // A commit cut by the page (one of more than CATCH_UP_ROWS changes, such as a sweep expiring 1000 keys)
        // goes on in the next page, whose rows join its event above.
        after = rows[rows.length - 1];
        this.seen = after.revision - 1;
      }
    } catch {
      // Busy or failing: the next notification or poll tick tries again.
    }
    this.tell(events);
  }

  private tell(events: CommitEvent[]): void {
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
