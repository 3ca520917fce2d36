// Server-sent events for the board: tells each connected browser when the store moved, so it re-reads what changed.
import type { ServerResponse } from 'node:http';
import type { BoardSource } from './board-reader.js';
import { SECTIONS, type Section } from './layout.js';

interface Viewer {
  res: ServerResponse;
  namespace: string;
}

const KEEPALIVE_MS = 15_000;

/**
 * Follows the store revision while at least one browser is connected (no reads at all otherwise) and sends each
 * stream `change` events naming the sections to re-read. Events:
 * - `hello` `{revision}` on connect (and reconnect): read the whole board;
 * - `change` `{revision, sections}` when the store moved;
 * - `status` `{ok, message?}` when the store cannot be read, and again when it can.
 */
export class LiveRevision {
  private readonly viewers = new Set<Viewer>();
  private timer?: NodeJS.Timeout;
  private keepalive?: NodeJS.Timeout;
  private last?: number;
  private healthy = true;
  private closed = false;

  constructor(
    private readonly source: BoardSource,
    private readonly intervalMs: number,
  ) {}

  add(res: ServerResponse, namespace: string): void {
    const viewer = { res, namespace };
    this.viewers.add(viewer);
    res.on('close', () => {
      this.viewers.delete(viewer);
      if (this.viewers.size === 0) this.stop();
    });
    // A dropped connection is retried by the browser after a second.
    res.write('retry: 1000\n\n');
    void this.source.revision().then(
      (revision) => {
        // The browser reads the board after this, so a later commit moves the revision past `last`.
        this.last ??= revision;
        send(res, 'hello', { revision, ok: true });
      },
      (error: unknown) => send(res, 'hello', { revision: null, ok: false, message: (error as Error).message }),
    );
    this.start();
  }

  close(): void {
    this.closed = true;
    this.stop();
    for (const { res } of this.viewers) res.end();
    this.viewers.clear();
  }

  private start(): void {
    if (this.timer || this.closed) return;
    this.keepalive = setInterval(() => {
      for (const { res } of this.viewers) res.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    const tick = async (): Promise<void> => {
      await this.poll();
      if (this.timer) this.timer = setTimeout(() => void tick(), this.intervalMs);
    };
    this.timer = setTimeout(() => void tick(), this.intervalMs);
  }

  private stop(): void {
    clearTimeout(this.timer);
    clearInterval(this.keepalive);
    this.timer = undefined;
    this.keepalive = undefined;
    this.last = undefined;
  }

  private async poll(): Promise<void> {
    let revision: number;
    try {
      revision = await this.source.revision();
    } catch (error) {
      if (this.healthy) this.broadcast('status', { ok: false, message: (error as Error).message });
      this.healthy = false;
      return;
    }
    if (!this.healthy) this.broadcast('status', { ok: true });
    this.healthy = true;
    if (this.last !== undefined && revision !== this.last) this.broadcast('change', { revision, sections: SECTIONS });
    this.last = revision;
  }

  private broadcast(event: string, data: { revision?: number; sections?: readonly Section[]; ok?: boolean; message?: string }): void {
    for (const { res } of this.viewers) send(res, event, data);
  }
}

function send(res: ServerResponse, event: string, data: unknown): void {
  if (!res.writableEnded) res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}
