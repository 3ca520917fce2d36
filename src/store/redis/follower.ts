// Follows a Redis board's change log with XREAD BLOCK on a connection of its own, across reconnects, while anybody
// listens (and a short linger after).
import type { RedisConnection } from './client.js';
import { CommitListeners } from '../commit-listeners.js';
import type { CommitEvent } from '../types.js';
import { named } from './scripts.js';

/** a stream id after every entry of a revision */
const afterRevision = (revision: number): string => `${revision}-18446744073709551615`;
const BLOCK_MS = 5000;
/** more revisions than this to catch up on at start: listeners re-read instead */
const MAX_CATCH_UP = 10_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One run of following, from a revision until `stop()`. Each stream entry becomes `{revision, keys}`. The position
 * is kept across failures: after a reconnect, reading resumes where it was, so nothing is missed. What cannot be
 * resumed — entries pruned before they were read, a Redis that came back with less than it had — is a gap.
 */
export class RedisFollower {
  private stopped = false;
  private connection?: RedisConnection;

  constructor(
    private readonly main: RedisConnection,
    private readonly from: number,
    private readonly emit: (event: CommitEvent) => void,
  ) {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    // Ends a pending XREAD BLOCK at once.
    this.connection?.destroy();
    this.connection = undefined;
  }

  private async run(): Promise<void> {
    let cursor = afterRevision(this.from);
    for (let failures = 0; !this.stopped; ) {
      let connection = this.connection;
      try {
        if (!connection) {
          // A fresh connection after every failure: one to a server that hung or vanished without closing the
          // socket would otherwise block for good.
          connection = await this.main.duplicate();
          if (this.stopped) {
            connection.destroy();
            return;
          }
          this.connection = connection;
          const [revision, compacted] = ((await connection.script('POSITION', [])) as string[]).map(Number);
          const at = Number(cursor.slice(0, cursor.indexOf('-')));
          if (compacted > at || revision < at || revision - at > MAX_CATCH_UP) {
            cursor = afterRevision(revision);
            this.emit({ gap: true });
          }
        }
        const reply = (await connection.call(
          ['XREAD', 'COUNT', '1000', 'BLOCK', String(BLOCK_MS), 'STREAMS', named(this.main.keys).log, cursor],
          BLOCK_MS + this.main.timeoutMs,
        )) as Array<[string, Array<[string, string[]]>]> | null;
        failures = 0;
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          if (this.stopped) return;
          cursor = id;
          const keys: string[] = [];
          for (let i = 2; i < fields.length; i += 2) keys.push(fields[i]);
          this.emit({ revision: Number(id.slice(0, id.indexOf('-'))), keys });
        }
      } catch {
        connection?.destroy();
        if (this.connection === connection) this.connection = undefined;
        if (this.stopped) return;
        await sleep(Math.min(50 * 2 ** failures++, 1000));
      }
    }
  }
}

/**
 * The listeners of a board's foreign commits, and the follower that serves them: started with the first listener at
 * the highest revision the backend has seen, and stopped when {@link CommitListeners} says (after its linger, a
 * listener that comes back meanwhile finds it following), or at once by `close()`.
 */
export class RedisCommitListeners {
  private follower?: RedisFollower;
  private readonly listeners = new CommitListeners({
    start: () => {
      this.follower ??= new RedisFollower(this.main, this.known(), (event) => {
        if ('revision' in event) this.see(event.revision);
        this.listeners.emit(event);
      });
    },
    stop: () => {
      this.follower?.stop();
      this.follower = undefined;
    },
  });

  constructor(
    private readonly main: RedisConnection,
    /** the highest revision the backend has seen, where a new follower starts */
    private readonly known: () => number,
    /** told of every revision the follower reads */
    private readonly see: (revision: number) => void,
  ) {}

  subscribe(listener: (event: CommitEvent) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  close(): void {
    this.listeners.close();
  }
}
