// `redis://` and `rediss://`: the board in a Redis (or Valkey) with Lua scripting, shared by many processes and machines.
import { createHash } from 'node:crypto';
import { createClient } from '@redis/client';
import { isRecord, corrupt } from './codec.js';
import { compareKeys } from './keys.js';
import { maskStoreUrl as maskUrl } from './url.js';
import { KEY_NAMES, SCRIPTS, keysOf, type ScriptName } from './redis-scripts.js';
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

/**
 * A client with the offline queue disabled (a call while disconnected fails at once instead of waiting in an
 * unbounded buffer). At start-up an unreachable server is an error at once; once connected, the client keeps
 * reconnecting, quickly, for as long as it is open.
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
type Reply = null | string | number | Reply[];

/** Options of a Redis store, from the URL query (`?prefix=…&timeout=…`) or given by a caller. */
export interface RedisOptions {
  /** key prefix (a hash tag) that keeps several boards apart on one Redis; default `bb` */
  prefix?: string;
  /** how long one call to Redis may take before it fails (ms, default 5000) */
  callTimeoutMs?: number;
  /** how long a transaction keeps re-running on conflicts before it gives up (ms, default 10000) */
  conflictTimeoutMs?: number;
  /** change log entries kept at most, whatever their age (default 100000) */
  maxLogEntries?: number;
}

/** A parsed store URL: what the client connects to, and what people are shown (password masked). */
export interface RedisTarget {
  clientUrl: string;
  description: string;
  options: Required<Pick<RedisOptions, 'prefix'>> & RedisOptions;
}

const PREFIX = /^[A-Za-z0-9_.:-]{1,64}$/;
/** a stream id after every entry of a revision */
const afterRevision = (revision: number): string => `${revision}-18446744073709551615`;
const LISTEN_BLOCK_MS = 5000;

/** Parses `redis[s]://[[user]:pass@]host[:port][/db][?prefix=NAME&timeout=MS]`. */
export function parseRedisUrl(url: string): RedisTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`"${maskUrl(url)}" is not a valid URL: use redis://[:password@]host:port[/db][?prefix=NAME]`);
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
  return { clientUrl, description: maskUrl(clientUrl) + query, options };
}

/** Version of a raw record as the commit script checks it: 0 = absent, -1 = unreadable. */
const revOf = (raw: string | null | undefined): number => {
  if (raw === null || raw === undefined) return 0;
  const match = /^\{"rev":(\d+),/.exec(raw);
  return match ? Number(match[1]) : -1;
};

function decode(key: string, raw: string): StoredRecord {
  let record: unknown;
  try {
    record = JSON.parse(raw);
  } catch {
    throw corrupt(key);
  }
  if (!isRecord(record)) throw corrupt(key);
  return record;
}

/** Rejects when `promise` has not settled within `ms` (the promise itself is left to settle unheard). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  promise.catch(() => {});
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const str = (reply: Reply): string => (reply === null ? '' : String(reply));

/**
 * A board in Redis. Records are JSON text in one hash; sorted sets index them for code-point-ordered listing, expiry
 * and tombstones; the revision is a counter; the change log is a stream whose ids are revisions. Reads that must
 * agree are one read-only script; a commit is one script that checks what the transaction read (record revisions,
 * or the store revision after a listing) and applies everything or nothing, so transactions are optimistic and
 * re-run on conflict. Other processes' commits are followed with `XREAD BLOCK` on a second connection.
 *
 * Failure behaviour: the offline queue is disabled and every call has a timeout, so a Redis that is down or hangs
 * fails calls within seconds; the client reconnects by itself and calls succeed again when Redis is back.
 */
export class RedisBackend implements Backend {
  readonly shared = true;
  /** set at open when the server's persistence settings cannot give "acknowledged means durable" */
  warning: string | undefined;
  private readonly keys: string[];
  private readonly shas = new Map<ScriptName, string>();
  private offset = 0;
  /** the highest revision this process has seen: where following other commits starts */
  private known = 0;
  private readonly listeners = new Set<(event: CommitEvent) => void>();
  private follower?: Client;
  private generation = 0;
  private closed = false;

  private constructor(
    readonly description: string,
    private readonly client: Client,
    private readonly options: Required<RedisOptions>,
  ) {
    this.keys = keysOf(options.prefix);
  }

  /** Connects, checks the server (Lua, version, persistence), loads the scripts; fails fast when unreachable. */
  static async open(url: string, overrides: RedisOptions = {}): Promise<RedisBackend> {
    const target = parseRedisUrl(url);
    const options: Required<RedisOptions> = {
      callTimeoutMs: 5000,
      conflictTimeoutMs: 10_000,
      maxLogEntries: 100_000,
      ...target.options,
      ...overrides,
    };
    let ready = false;
    const client = newClient(target.clientUrl, Math.min(options.callTimeoutMs, 5000), () => ready);
    client.on('error', () => {}); // failures surface as rejected calls; an unheard 'error' event would crash
    try {
      await client.connect();
      ready = true;
      const backend = new RedisBackend(target.description, client, options);
      backend.warning = await backend.prepare();
      return backend;
    } catch (error) {
      client.destroy();
      throw new Error(describe(error));
    }
  }

  /** Checks the server and loads the scripts; returns a durability warning, if any. */
  private async prepare(): Promise<string | undefined> {
    const info = str(await this.call(['INFO', 'server']));
    const version = /redis_version:(\d+)\.(\d+)/.exec(info);
    if (version && (Number(version[1]) < 6 || (Number(version[1]) === 6 && Number(version[2]) < 2))) {
      throw new Error(`Redis ${version[1]}.${version[2]} is too old: 6.2 or later is needed`);
    }
    for (const name of Object.keys(SCRIPTS) as ScriptName[]) {
      this.shas.set(name, str(await this.call(['SCRIPT', 'LOAD', SCRIPTS[name]])));
    }
    const begun = await this.begin([]);
    this.known = begun.revision;
    return this.durabilityWarning();
  }

  private async durabilityWarning(): Promise<string | undefined> {
    let aof: string;
    let fsync: string;
    try {
      aof = str(((await this.call(['CONFIG', 'GET', 'appendonly'])) as Reply[])[1] ?? null);
      fsync = str(((await this.call(['CONFIG', 'GET', 'appendfsync'])) as Reply[])[1] ?? null);
    } catch {
      return `cannot read the persistence settings of ${this.description} (CONFIG GET is not allowed); acknowledged writes survive a crash of Redis only with appendonly yes and appendfsync always.`;
    }
    if (aof === 'yes' && fsync === 'always') return undefined;
    return `${this.description} runs with appendonly ${aof || '?'}, appendfsync ${fsync || '?'}: a crash of Redis can lose acknowledged writes. Set appendonly yes and appendfsync always for "acknowledged means durable".`;
  }

  now(): number {
    return Date.now() + this.offset;
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    const raw = (await this.call(['HGET', this.keys[1], key])) as string | null;
    return raw === null ? undefined : decode(key, raw);
  }

  async list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    const { rows, revision } = await this.listRaw(query);
    return { rows, revision };
  }

  async revision(): Promise<number> {
    const revision = Number((await this.call(['GET', this.keys[0]])) ?? 0);
    this.see(revision);
    return revision;
  }

  async transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
    prefetch: string[] = [],
  ): Promise<{ result: T; revision: number }> {
    const deadline = Date.now() + this.options.conflictTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      const begun = await this.begin(prefetch);
      const cache = new Map<string, string | null>(begun.fetched);
      const reads = new Map<string, number>();
      let listRevision = -1;
      let consistent = true;
      // Reads made after the first round trip happen at different moments: unless there is only one read in all,
      // they are checked against each other before the result counts.
      let laterReads = 0;
      let prefetchedReads = 0;
      const tx: BackendTx = {
        get: async (key) => {
          let raw = cache.get(key);
          if (raw !== undefined && begun.fetched.has(key)) prefetchedReads++;
          if (raw === undefined) {
            laterReads++;
            raw = (await this.call(['HGET', this.keys[1], key])) as string | null;
            cache.set(key, raw);
          }
          if (!reads.has(key)) reads.set(key, revOf(raw));
          return raw === null ? undefined : decode(key, raw);
        },
        list: async (query) => {
          laterReads++;
          const { rows, revision } = await this.listRaw(query);
          if (listRevision >= 0 && listRevision !== revision) consistent = false;
          listRevision = Math.max(listRevision, revision);
          return rows;
        },
      };
      const needsCheck = (): boolean => laterReads > 1 || (laterReads === 1 && prefetchedReads > 0);
      let outcome: { result: T; writes: Writes };
      try {
        outcome = await fn(tx, { revision: begun.revision, now: begun.now });
      } catch (error) {
        // An error decided from reads that no longer agree with each other is decided again; otherwise it stands.
        if (attempt < 50 && Date.now() < deadline && needsCheck()) {
          const ok = !consistent ? false : await this.commit(reads, listRevision, begun.now, new Map()).then((r) => r.ok, () => true);
          if (!ok) {
            await this.backoff(attempt);
            continue;
          }
        }
        throw error;
      }
      if (consistent) {
        if (outcome.writes.size === 0 && !needsCheck()) {
          return { result: outcome.result, revision: Math.max(begun.revision, listRevision) };
        }
        const committed = await this.commit(reads, listRevision, begun.now, outcome.writes);
        if (committed.ok) return { result: outcome.result, revision: committed.revision };
      }
      if (attempt >= 50 || Date.now() > deadline) {
        throw new Error(`a transaction met conflicting writes ${attempt + 1} times in a row and gave up`);
      }
      await this.backoff(attempt);
    }
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    const limit = String(query.limit);
    const [expired, tombstones] = (await Promise.all([
      this.call(['ZRANGEBYSCORE', this.keys[3], '-inf', String(query.now), 'LIMIT', '0', limit]),
      this.call(['ZRANGEBYSCORE', this.keys[4], '-inf', String(query.tombstonesBefore), 'LIMIT', '0', limit]),
    ])) as [string[], string[]];
    return [...new Set([...expired, ...tombstones])].slice(0, query.limit);
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    const changes: ChangeRow[] = [];
    /** rows of the revision being read, sorted by key once it is complete (a large commit spans entries) */
    let pending: ChangeRow[] = [];
    const flush = (): boolean => {
      pending.sort((a, b) => compareKeys(a.key, b.key));
      for (const row of pending) {
        if (changes.length >= query.limit) return true;
        changes.push(row);
      }
      pending = [];
      return changes.length >= query.limit;
    };
    const batch = Math.min(1000, Math.max(100, query.limit));
    let start = `${query.after + 1}-0`;
    for (;;) {
      const [rev, compacted, entries] = (await this.script('CHANGES', [start, String(batch)])) as [string, string, Reply[]];
      const revision = Number(rev);
      this.see(revision);
      for (const entry of entries as Array<[string, string[]]>) {
        const [id, fields] = entry;
        const entryRevision = Number(id.slice(0, id.indexOf('-')));
        if (pending.length > 0 && pending[0].revision !== entryRevision && flush()) {
          return { changes, revision, compacted: Number(compacted) };
        }
        for (let i = 2; i < fields.length; i += 2) {
          const key = fields[i];
          if (compareKeys(key, query.lo) < 0 || compareKeys(key, query.hi) >= 0) continue;
          const value = fields[i + 1];
          pending.push({ revision: entryRevision, key, version: parseInt(value, 10), deleted: value.endsWith('d') });
        }
      }
      if (entries.length < batch) {
        flush();
        return { changes, revision, compacted: Number(compacted) };
      }
      start = `(${(entries[entries.length - 1] as [string])[0]}`;
    }
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    return Number(await this.script('PRUNE', [String(before), String(limit)]));
  }

  onForeignCommit(listener: (event: CommitEvent) => void): () => void {
    this.listeners.add(listener);
    if (this.listeners.size === 1 && !this.closed) void this.follow();
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopFollowing();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.stopFollowing();
    await this.client.close().catch(() => this.client.destroy());
  }

  /**
   * Follows the change log on a connection of its own with `XREAD BLOCK`, from the highest revision this process
   * had seen when the first listener came: every commit after that is delivered, across reconnects (the position
   * is kept). Missed entries (pruned before they were read, or a Redis that lost data) are reported as a gap.
   */
  private async follow(): Promise<void> {
    const generation = ++this.generation;
    const active = (): boolean => this.generation === generation && !this.closed;
    let cursor = afterRevision(this.known);
    let follower: Client | undefined;
    for (let failures = 0; active(); ) {
      try {
        if (!follower) {
          // A fresh connection each time the last one failed: a connection to a server that hung or vanished
          // without closing the socket would otherwise block forever.
          const connection = this.client.duplicate();
          connection.on('error', () => {});
          follower = this.follower = connection;
          await withTimeout(connection.connect(), this.options.callTimeoutMs);
          if (!active()) break;
          const [rev, compacted] = ((await this.script('POSITION', [], connection)) as string[]).map(Number);
          const from = Number(cursor.slice(0, cursor.indexOf('-')));
          // Pruned entries this follower never read, a Redis that came back with less than it had, or too much to
          // catch up on: listeners re-read instead.
          if (compacted > from || rev < from || rev - from > 10_000) {
            cursor = afterRevision(rev);
            this.emit({ gap: true });
          }
        }
        const reply = (await this.call(
          ['XREAD', 'COUNT', '1000', 'BLOCK', String(LISTEN_BLOCK_MS), 'STREAMS', this.keys[5], cursor],
          follower,
          LISTEN_BLOCK_MS + this.options.callTimeoutMs,
        )) as Array<[string, Array<[string, string[]]>]> | null;
        failures = 0;
        if (!active()) break;
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          cursor = id;
          const revision = Number(id.slice(0, id.indexOf('-')));
          this.see(revision);
          const keys: string[] = [];
          for (let i = 2; i < fields.length; i += 2) keys.push(fields[i]);
          this.emit({ revision, keys });
        }
      } catch {
        follower?.destroy();
        if (this.follower === follower) this.follower = undefined;
        follower = undefined;
        if (!active()) break;
        // Redis is away: wait, then resume from the same position on a new connection.
        await sleep(Math.min(50 * 2 ** failures++, 1000));
      }
    }
    if (follower) {
      if (this.follower === follower) this.follower = undefined;
      follower.destroy();
    }
  }

  private stopFollowing(): void {
    this.generation++;
    const follower = this.follower;
    this.follower = undefined;
    // Ends a pending XREAD BLOCK at once; the loop sees it is no longer current and stops.
    follower?.destroy();
  }

  private emit(event: CommitEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // one listener's failure must not starve the others
      }
    }
  }

  private see(revision: number): void {
    if (revision > this.known) this.known = revision;
  }

  private async begin(prefetch: string[]): Promise<{ revision: number; now: number; fetched: Map<string, string | null> }> {
    const sent = Date.now();
    const reply = (await this.script('BEGIN', prefetch)) as Array<string | null>;
    const received = Date.now();
    const revision = Number(reply[0]);
    const server = Number(reply[1]) * 1000 + Math.floor(Number(reply[2]) / 1000);
    this.offset = server - Math.round((sent + received) / 2);
    this.see(revision);
    const fetched = new Map<string, string | null>();
    prefetch.forEach((key, i) => fetched.set(key, reply[3 + i] ?? null));
    return { revision, now: server, fetched };
  }

  private async listRaw(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    if (query.limit <= 0 || compareKeys(query.lo, query.hi) >= 0) return { rows: [], revision: await this.revision() };
    const useAfter = query.after !== undefined && compareKeys(query.after, query.lo) >= 0;
    const start = useAfter ? `(${query.after}` : query.lo === '' ? '-' : `[${query.lo}`;
    const reply = (await this.script('LIST', [start, `(${query.hi}`, String(query.limit), String(query.now)])) as string[];
    const revision = Number(reply[0]);
    this.see(revision);
    const rows: Array<[string, StoredRecord]> = [];
    for (let i = 1; i < reply.length; i += 2) {
      try {
        rows.push([reply[i], decode(reply[i], reply[i + 1])]);
      } catch {
        // A corrupt record is skipped in listings; reading that key directly reports it.
      }
    }
    return { rows, revision };
  }

  private async commit(
    reads: Map<string, number>,
    listRevision: number,
    now: number,
    writes: Writes,
  ): Promise<{ ok: boolean; revision: number }> {
    const args = [String(listRevision), String(now), String(this.options.maxLogEntries), String(reads.size)];
    for (const [key, rev] of reads) args.push(key, String(rev));
    for (const [key, write] of writes) {
      const record = write.record;
      if (record === null) {
        args.push(key, '', '', '', '');
        continue;
      }
      const { rev: _stamped, ...rest } = record as StoredRecord;
      void _stamped;
      const text = JSON.stringify(rest);
      args.push(
        key,
        text.slice(1),
        record.exp !== undefined ? String(record.exp) : '',
        record.del === 1 ? String(record.at) : '',
        write.log ? `${record.ver}${record.del === 1 ? 'd' : ''}` : '',
      );
    }
    const [ok, revision] = ((await this.script('COMMIT', args)) as Reply[]).map(Number);
    this.see(revision);
    return { ok: ok === 1, revision };
  }

  private async backoff(attempt: number): Promise<void> {
    await sleep(Math.random() * Math.min(50, 2 ** attempt));
  }

  /**
   * One command with this store's timeout; fails at once while disconnected (no offline queue). The client's own
   * command timeout only covers the wait before a command is sent, so a server that hangs after receiving it is
   * timed out here.
   */
  private async call(args: string[], client: Client = this.client, timeoutMs = this.options.callTimeoutMs): Promise<Reply> {
    return withTimeout(client.sendCommand(args, { timeout: timeoutMs }) as Promise<Reply>, timeoutMs);
  }

  /** Runs a script by its SHA, loading it again when the server no longer has it (after a restart). */
  private async script(name: ScriptName, argv: string[], client: Client = this.client): Promise<Reply> {
    const sha = this.shas.get(name) ?? sha1(SCRIPTS[name]);
    const args = [String(KEY_NAMES.length), ...this.keys, ...argv];
    try {
      return await this.call(['EVALSHA', sha, ...args], client);
    } catch (error) {
      if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
      this.shas.set(name, str(await this.call(['SCRIPT', 'LOAD', SCRIPTS[name]], client)));
      return this.call(['EVALSHA', this.shas.get(name)!, ...args], client);
    }
  }
}

/** A one-line cause (a refused connection to "localhost" is an AggregateError with an empty message). */
function describe(error: unknown): string {
  const e = error as { message?: string; code?: string; errors?: unknown[] } | undefined;
  if (e?.message) return e.message;
  if (e?.errors?.length) return describe(e.errors[0]);
  return e?.code ?? String(error);
}

const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');
