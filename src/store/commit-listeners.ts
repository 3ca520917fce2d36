// The listeners of other processes' commits that a shared backend serves, and when it follows for them: from the
// first listener until a short linger after the last one left.
import type { CommitEvent } from './types.js';

/**
 * How long a backend that follows other processes' commits on a connection of its own keeps following after its last
 * listener left: an agent that watches in a loop keeps one connection instead of opening one for every wait.
 */
export const FOLLOW_LINGER_MS = 5000;

/** What a backend does as listeners come and go. */
export interface Following {
  /** a listener subscribed (it may already be following) */
  start(): void;
  /** the last listener left: what to stop at once, before the linger (optional) */
  idle?(): void;
  /** nobody came back within {@link FOLLOW_LINGER_MS}, or the backend is closing: stop following */
  stop(): void;
}

/** The listeners, telling each event to all of them; one listener's failure is its own. */
export class CommitListeners {
  private readonly listeners = new Set<(event: CommitEvent) => void>();
  private linger?: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly following: Following) {}

  /** How many listen now. */
  get size(): number {
    return this.listeners.size;
  }

  subscribe(listener: (event: CommitEvent) => void): () => void {
    this.listeners.add(listener);
    if (this.linger) clearTimeout(this.linger);
    this.linger = undefined;
    if (!this.closed) this.following.start();
    return () => {
      if (!this.listeners.delete(listener) || this.listeners.size > 0 || this.closed) return;
      this.following.idle?.();
      this.linger = setTimeout(() => {
        this.linger = undefined;
        if (this.listeners.size === 0) this.following.stop();
      }, FOLLOW_LINGER_MS);
      this.linger.unref();
    };
  }

  emit(event: CommitEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // one listener's failure must not starve the others
      }
    }
  }

  /** The backend is closing: no listener from now on, no linger, and following stopped. */
  close(): void {
    this.closed = true;
    this.listeners.clear();
    if (this.linger) clearTimeout(this.linger);
    this.linger = undefined;
    this.following.stop();
  }
}
