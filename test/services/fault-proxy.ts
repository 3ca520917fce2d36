// A TCP proxy on 127.0.0.1 for fault tests: it resets every connection at once, or holds all traffic (a partition).
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** A proxy in front of one database server. */
export interface FaultProxy {
  /** the port it listens on (127.0.0.1) */
  port: number;
  /** `url` (a postgres:// or redis:// URL of the target) pointed at the proxy instead */
  via(url: string): string;
  /** Resets every open connection (RST to both ends), as a failover or a NAT dropping its table does; returns how many. */
  resetAll(): number;
  /**
   * A silent partition for `ms`: nothing is forwarded either way and no close gets through (new connections are
   * accepted and wait); at the end (or at `heal()`) what was held is delivered in order, as TCP would after a partition
   * shorter than its timeouts. Resolves when healed.
   */
  partition(ms: number): Promise<void>;
  /**
   * The same silence for one connection only, the one whose client end is at local port `clientPort` (a client
   * left behind a partition while others, new connections included, get through), until `heal()`.
   */
  freeze(clientPort: number): void;
  heal(): void;
  /** open connections */
  connections(): number;
  /** how many connections it has accepted in all */
  accepted(): number;
  close(): Promise<void>;
}

type Held = Buffer | 'end';

interface Pair {
  client: Socket;
  upstream: Socket;
  /** what is waiting for the partition to end, per direction */
  toUpstream: Held[];
  toClient: Held[];
}

/** Starts a proxy to `target` (host:port, or a URL whose host and port are taken). */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const { hostname, port: targetPort } = new URL(target.includes('://') ? target : `tcp://${target}`);
  const pairs = new Set<Pair>();
  const frozen = new Set<Pair>();
  let partitioned = false;
  let healTimer: NodeJS.Timeout | undefined;
  let healed: Array<() => void> = [];
  let accepted = 0;

  const send = (pair: Pair, to: Socket, queue: Held[], item: Held): void => {
    if (partitioned || frozen.has(pair)) {
      queue.push(item);
      return;
    }
    if (to.destroyed) return;
    if (item === 'end') to.end();
    else to.write(item);
  };
  const drop = (pair: Pair, reset: boolean): void => {
    if (!pairs.delete(pair)) return;
    for (const socket of [pair.client, pair.upstream]) {
      if (reset && !socket.destroyed && socket.readyState !== 'opening') socket.resetAndDestroy();
      else if (reset) socket.destroy();
      else socket.destroySoon(); // after what was written to it has gone out
    }
  };

  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    accepted++;
    const upstream = createConnection({ host: hostname, port: Number(targetPort), allowHalfOpen: true });
    const pair: Pair = { client, upstream, toUpstream: [], toClient: [] };
    pairs.add(pair);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on('data', (chunk) => send(pair, upstream, pair.toUpstream, chunk));
    upstream.on('data', (chunk) => send(pair, client, pair.toClient, chunk));
    client.on('end', () => send(pair, upstream, pair.toUpstream, 'end'));
    upstream.on('end', () => send(pair, client, pair.toClient, 'end'));
    // An error or a full close on one side: the other side is closed too (held back while partitioned).
    const closed = (): void => {
      if (!partitioned && !frozen.has(pair)) drop(pair, false);
    };
    client.on('error', closed);
    upstream.on('error', closed);
    client.on('close', closed);
    upstream.on('close', closed);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  const heal = (): void => {
    if (healTimer) clearTimeout(healTimer);
    healTimer = undefined;
    if (!partitioned && frozen.size === 0) return;
    partitioned = false;
    frozen.clear();
    for (const pair of [...pairs]) {
      for (const [to, queue] of [
        [pair.upstream, pair.toUpstream],
        [pair.client, pair.toClient],
      ] as const) {
        for (const item of queue.splice(0)) send(pair, to, queue, item);
      }
      // A side that closed during the partition: its close gets through now.
      if (pair.client.destroyed || pair.upstream.destroyed) drop(pair, false);
    }
    for (const done of healed.splice(0)) done();
  };

  return {
    port,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    resetAll() {
      const n = pairs.size;
      for (const pair of [...pairs]) drop(pair, true);
      return n;
    },
    partition(ms) {
      partitioned = true;
      if (healTimer) clearTimeout(healTimer);
      healTimer = setTimeout(heal, ms);
      return new Promise<void>((resolve) => healed.push(resolve));
    },
    freeze(clientPort) {
      for (const pair of pairs) if (pair.client.remotePort === clientPort) frozen.add(pair);
    },
    heal,
    connections: () => pairs.size,
    accepted: () => accepted,
    async close() {
      heal();
      healed = [];
      for (const pair of [...pairs]) drop(pair, false);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
