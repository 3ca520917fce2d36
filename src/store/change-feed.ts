// Wake-ups for waiters: by key or by key range, from this process's commits and the backend's foreign-commit events.
import { compareKeys } from './keys.js';
import type { Backend, CommitEvent } from './types.js';

type Listener = () => void;
interface RangeListener {
  lo: string;
  hi: string;
  listener: Listener;
}

/**
 * Who waits on what. A commit in this process publishes its keys at once; commits by other processes arrive from
 * the backend as events with their keys (only the waiters of those keys wake), or as a gap (everyone re-reads).
 * The backend is listened to only while somebody waits.
 */
export class ChangeFeed {
  private readonly byKey = new Map<string, Set<Listener>>();
  private readonly ranges = new Set<RangeListener>();
  private count = 0;
  private stopForeign?: () => void;

  constructor(private readonly backend: Backend) {}

  /** Calls `listener` after every commit that may have changed `key`. Returns the unsubscribe function. */
  subscribeKey(key: string, listener: Listener): () => void {
    let set = this.byKey.get(key);
    if (!set) {
      set = new Set();
      this.byKey.set(key, set);
    }
    set.add(listener);
    return this.added(() => {
      set.delete(listener);
      if (set.size === 0) this.byKey.delete(key);
    });
  }

  /** Calls `listener` after every commit that may have changed a key of `[lo, hi)`. */
  subscribeRange(lo: string, hi: string, listener: Listener): () => void {
    const entry = { lo, hi, listener };
    this.ranges.add(entry);
    return this.added(() => this.ranges.delete(entry));
  }

  publish(keys: Iterable<string>): void {
    const woken = new Set<Listener>();
    for (const key of keys) {
      for (const listener of this.byKey.get(key) ?? []) woken.add(listener);
      for (const range of this.ranges) if (compareKeys(key, range.lo) >= 0 && compareKeys(key, range.hi) < 0) woken.add(range.listener);
    }
    for (const listener of woken) listener();
  }

  private onForeign(event: CommitEvent): void {
    if ('gap' in event) {
      for (const set of [...this.byKey.values()]) for (const listener of [...set]) listener();
      for (const range of [...this.ranges]) range.listener();
    } else {
      this.publish(event.keys);
    }
  }

  private added(remove: () => void): () => void {
    if (this.count++ === 0 && this.backend.shared) this.stopForeign = this.backend.onForeignCommit((e) => this.onForeign(e));
    let done = false;
    return () => {
      if (done) return;
      done = true;
      remove();
      if (--this.count === 0) {
        this.stopForeign?.();
        this.stopForeign = undefined;
      }
    };
  }
}
