// The Redis connection of the Redis backend: URL options, a client that fails fast instead of queueing, timeouts, scripts.
import { createClient } from '@redis/client';
import { KEY_NAMES, SCRIPTS, type ScriptName } from './scripts.js';
import { maskPassword as maskStoreUrl } from '../url.js';

/** Options of a Redis store, from the URL query (`?prefix=…&timeout=…`) or given by a caller. */
export interface RedisOptions {
  /** key prefix (a hash tag) that keeps several boards apart on one Redis; default `bb` */
  prefix?: string;
  /** how long one call to Redis may take before it fails (ms, default 5000) */
  callTimeoutMs?: number;
  /** how long a transaction keeps re-running on conflicts before it gives up (ms, default 20000) */
  conflictTimeoutMs?: number;
  /** change log entries kept at most, whatever their age (default 100000) */
  maxLogEntries?: number;
  /** how long a call may try before it answers (ms; default 11000, or the call timeout if longer) */
  callBudgetMs?: number;
}

/** A parsed store URL: what the client connects to, and what people are shown (password masked). */
export interface RedisTarget {
  clientUrl: string;
  description: string;
  options: Required<Pick<RedisOptions, 'prefix'>> & RedisOptions;
}

/** A reply as RESP2 gives it: bulk strings, integers, nil, arrays. */
export type Reply = null | string | number | Reply[];

const PREFIX = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Parses `redis[s]://[[user]:pass@]host[:port][/db][?prefix=NAME&timeout=MS]`. */
export function parseRedisUrl(url: string): RedisTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`"${maskStoreUrl(url)}" is not a valid URL: use redis://[:password@]host:port[/db][?prefix=NAME]`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new Error(`not a redis:// or rediss:// URL`);
  if (u.hostname === '') throw new Error('the Redis URL names no host: use redis://[:password@]host:port[/db]');
  if (u.pathname !== '' && u.pathname !== '/' && !/^\/\d{1,2}$/.test(u.pathname)) {
    throw new Error(`the Redis database must be a number (redis://host:port/0), not "${u.pathname.slice(1)}"`);
  }
  const options: RedisTarget['options'] = { prefix: 'bb' };
  for (const [name, value] of u.searchParams) {
    if (name === 'prefix') {
      if (!PREFIX.test(value)) throw new Error(`prefix must be 1-64 letters, digits, "_", "-", "." or ":", not "${value}"`);
      options.prefix = value;
    } else if (name === 'timeout') {
      const ms = Number(value);
      if (!Number.isInteger(ms) || ms < 100 || ms > 600_000) throw new Error(`timeout must be milliseconds (100-600000), not "${value}"`);
      options.callTimeoutMs = ms;
    } else {
      throw new Error(`unknown Redis URL option "${name}" (known: prefix, timeout)`);
    }
  }
  const query = u.search;
  u.search = '';
  const clientUrl = u.toString();
  return { clientUrl, description: maskStoreUrl(clientUrl) + query, options };
}

/**
 * A client with the offline queue disabled (a call while disconnected fails at once instead of waiting in an
 * unbounded buffer) and a bounded command queue. At start-up an unreachable server is an error at once; once
 * connected, the client keeps reconnecting, quickly, for as long as it is open.
 */
const newClient = (url: string, connectTimeout: number, connected: () => boolean) =>
  createClient({
    url,
    RESP: 2,
    disableOfflineQueue: true,
    commandsQueueMaxLength: 10_000,
    socket: {
      connectTimeout,
      reconnectStrategy: (retries: number) => (connected() ? Math.min(20 * 2 ** retries, 500) : false),
    },
  });
type Client = ReturnType<typeof newClient>;

/**
 * Sets up a new client: failures surface as rejected calls (an unheard 'error' event would crash), and a client closed
 * or destroyed while its socket was still connecting drops that socket as soon as it connects (the client does not
 * stop the connect, and the socket would otherwise stay open for ever: a connection leaked at every stall, and a
 * process that cannot exit).
 */
function prepared(client: Client): Client {
  client.on('error', () => {});
  client.on('connect', () => {
    if (!client.isOpen) client.destroy();
  });
  return client;
}

/** A call that got no answer in time: the connection may be dead without knowing it (a silent partition). */
export class RedisTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
}

/** Rejects when `promise` has not settled within `ms` (the promise itself is left to settle unheard). */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeoutError(`Redis did not answer within ${ms} ms`)), ms);
  });
  promise.catch(() => {});
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A one-line cause (a refused connection to "localhost" is an AggregateError with an empty message). */
export function describeError(error: unknown): string {
  const e = error as { message?: string; code?: string; errors?: unknown[] } | undefined;
  if (e?.message) return e.message;
  if (e?.errors?.length) return describeError(e.errors[0]);
  return e?.code ?? String(error);
}

/**
 * One connection to the board's Redis: calls with a timeout, and the board's scripts by SHA. The client reconnects
 * by itself when its socket closes; a call that times out replaces the socket too (see {@link renew}), since a
 * connection cut by a silent partition never closes on its own.
 */
export class RedisConnection {
  private readonly shas: Map<ScriptName, string>;
  /** set by {@link close}: a call failing then does not wait for a reconnect that will not come */
  private closing = false;

  private constructor(
    private client: Client,
    /** the board's Redis keys, in the order the scripts take them */
    readonly keys: string[],
    readonly timeoutMs: number,
    shas: Map<ScriptName, string>,
  ) {
    this.shas = shas;
  }

  /** Connects; fails at once (no retry) when the server cannot be reached. */
  static async connect(url: string, keys: string[], timeoutMs: number): Promise<RedisConnection> {
    let ready = false;
    const client = prepared(newClient(url, Math.min(timeoutMs, 5000), () => ready));
    try {
      await withTimeout(client.connect(), timeoutMs);
    } catch (error) {
      client.destroy();
      throw error;
    }
    ready = true;
    return new RedisConnection(client, keys, timeoutMs, new Map());
  }

  /**
   * A second connection to the same server (for blocking reads), sharing the loaded scripts. It reconnects by itself
   * like this one; a failed connect is retried by whoever calls it again.
   */
  async duplicate(): Promise<RedisConnection> {
    const client = prepared(this.client.duplicate());
    const connection = new RedisConnection(client, this.keys, this.timeoutMs, this.shas);
    try {
      await withTimeout(client.connect(), this.timeoutMs);
    } catch (error) {
      client.destroy();
      throw error;
    }
    return connection;
  }

  /** Loads every script (also checks that the server runs Lua). */
  async loadScripts(): Promise<void> {
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      this.shas.set(name, String(await this.call(['SCRIPT', 'LOAD', SCRIPTS[name]])));
    }
  }

  /**
   * One command with a timeout; fails at once while disconnected (no offline queue). The client's own command
   * timeout only covers the wait before a command is sent, so a server that hangs after receiving it is timed out
   * here.
   */
  async call(args: string[], timeoutMs = this.timeoutMs): Promise<Reply> {
    const client = this.client;
    try {
      return await withTimeout(client.sendCommand(args, { timeout: timeoutMs }) as Promise<Reply>, timeoutMs);
    } catch (error) {
      if (error instanceof RedisTimeoutError) this.renew(client);
      throw error;
    }
  }

  /**
   * Runs a script by its SHA, loading it again when the server no longer has it (after a restart). `extraKeys` follow
   * the board's keys (KEYS[8]…).
   */
  async script(name: ScriptName, argv: string[], extraKeys: string[] = [], timeoutMs = this.timeoutMs): Promise<Reply> {
    const args = [String(KEY_NAMES.length + extraKeys.length), ...this.keys, ...extraKeys, ...argv];
    const sha = this.shas.get(name);
    if (sha !== undefined) {
      try {
        return await this.call(['EVALSHA', sha, ...args], timeoutMs);
      } catch (error) {
        if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
      }
    }
    const loaded = String(await this.call(['SCRIPT', 'LOAD', SCRIPTS[name]], timeoutMs));
    this.shas.set(name, loaded);
    return this.call(['EVALSHA', loaded, ...args], timeoutMs);
  }

  /** Whether calls can be sent now (connected), waiting for a reconnect until `deadline`; never once it is closing. */
  async ready(deadline: number): Promise<boolean> {
    while (!this.client.isReady) {
      if (this.closing || Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return true;
  }

  /**
   * Replaces a client whose call timed out by a fresh one (which keeps reconnecting by itself) and drops the old
   * socket, so that nothing sent on it can still arrive later. Calls fail fast (offline) until the new one is ready.
   */
  private renew(stale: Client): void {
    if (stale !== this.client) return;
    const fresh = prepared(stale.duplicate());
    this.client = fresh;
    fresh.connect().catch(() => {});
    stale.destroy();
  }

  async close(): Promise<void> {
    this.closing = true;
    await withTimeout(this.client.close(), this.timeoutMs).catch(() => this.client.destroy());
  }

  /** Drops the connection at once; a pending call (a blocking read) fails. */
  destroy(): void {
    this.client.destroy();
  }
}

const str = (reply: Reply): string => (reply === null ? '' : String(reply));

/** Refuses a server the board cannot run on: older than 6.2 (XTRIM MINID, exclusive ranges), or Redis Cluster. */
export async function checkServer(redis: RedisConnection): Promise<void> {
  const { version, mode } = await serverInfo(redis);
  const [major, minor] = (version ?? '').split('.').map(Number);
  if (version !== undefined && (major < 6 || (major === 6 && minor < 2))) {
    throw new Error(`Redis ${major}.${minor} is too old: 6.2 or later is needed`);
  }
  if (mode === 'cluster') {
    throw new Error('Redis Cluster is not supported: point the store at a standalone primary');
  }
}

/** A command this connection's user may not run (an ACL without it, as managed services give), or one renamed away. */
const refused = (error: unknown): boolean => /^(NOPERM|ERR unknown command)/.test(error instanceof Error ? error.message : '');

/**
 * The server's version and mode, from `INFO server`, or (a user not allowed INFO, which ACLs commonly leave out with
 * `-@dangerous`) from `HELLO`, which names both; neither known when both are refused.
 */
async function serverInfo(redis: RedisConnection): Promise<{ version?: string; mode?: string }> {
  try {
    const info = str(await redis.call(['INFO', 'server']));
    return { version: /redis_version:(\d+\.\d+)/.exec(info)?.[1], mode: /redis_mode:(\w+)/.exec(info)?.[1] };
  } catch (error) {
    if (!refused(error)) throw error;
  }
  try {
    const reply = (await redis.call(['HELLO'])) as Reply;
    const pairs = Array.isArray(reply) ? reply : Object.entries((reply ?? {}) as Record<string, Reply>).flat();
    const field = (name: string): string | undefined => {
      const at = pairs.findIndex((item, i) => i % 2 === 0 && str(item as Reply) === name);
      return at < 0 ? undefined : str(pairs[at + 1] as Reply);
    };
    return { version: /^(\d+\.\d+)/.exec(field('version') ?? '')?.[1], mode: field('mode') };
  } catch (error) {
    if (!refused(error)) throw error;
    return {};
  }
}

/**
 * What the server's settings cannot promise, as one sentence for stderr, or undefined when acknowledged writes are
 * durable: AOF with fsync on every write, and no eviction policy that could drop the board's keys.
 */
export async function durabilityWarning(redis: RedisConnection, description: string): Promise<string | undefined> {
  const setting = async (name: string): Promise<string> => str(((await redis.call(['CONFIG', 'GET', name])) as Reply[])[1] ?? null);
  let aof: string, fsync: string, maxmemory: string, policy: string;
  try {
    [aof, fsync, maxmemory, policy] = [
      await setting('appendonly'),
      await setting('appendfsync'),
      await setting('maxmemory'),
      await setting('maxmemory-policy'),
    ];
  } catch {
    return `cannot read the persistence settings of ${description} (CONFIG GET is not allowed); acknowledged writes survive a crash of Redis only with appendonly yes and appendfsync always.`;
  }
  const problems: string[] = [];
  if (aof !== 'yes' || fsync !== 'always') {
    problems.push(
      `it runs with appendonly ${aof || '?'}, appendfsync ${fsync || '?'}: a crash of Redis can lose acknowledged writes (set appendonly yes and appendfsync always for "acknowledged means durable")`,
    );
  }
  // The board's keys carry no expiry, so only the allkeys-* policies can evict them.
  if (maxmemory !== '' && maxmemory !== '0' && policy.startsWith('allkeys')) {
    problems.push(`its maxmemory-policy ${policy} can evict the board's records when memory runs out (use noeviction)`);
  }
  return problems.length > 0 ? `${description}: ${problems.join('; ')}.` : undefined;
}
