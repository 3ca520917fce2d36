// `memory://`: the backend for tests and throw-away sessions, a Keyv over a Map in this process.
import Keyv from 'keyv';
import { compareKeys } from '../keys.js';
import { Mutex } from './mutex.js';
import { serialize, deserialize, isRecord, corrupt } from '../codec.js';
import type { Backend, BackendTx, ChangeQuery, ChangeRow, CommitEvent, RangeQuery, StoredRecord, TxContext, Writes } from '../types.js';

/**
 * `memory://`: a Keyv over a Map, for tests and throw-away sessions. One process only; everything is lost on exit.
 * Every operation holds one mutex, so a transaction's writes are seen all at once.
 */
export class MemoryBackend implements Backend {
  readonly description = 'memory:// (in this process only; nothing survives a restart)';
  readonly shared = false;
  private readonly map = new Map<string, string>();
  private readonly keyv = new Keyv<StoredRecord>({
    store: this.map,
    namespace: undefined,
    useKeyPrefix: false,
    serialize,
    deserialize,
    throwOnErrors: true,
  });
  private readonly lock = new Mutex();
  private rev = 0;
  private log: Array<ChangeRow & { at: number }> = [];
  private compacted = 0;

  now(): number {
    return Date.now();
  }

  async get(key: string): Promise<StoredRecord | undefined> {
    return this.lock.run(() => this.read(key));
  }

  async list(query: RangeQuery): Promise<{ rows: Array<[string, StoredRecord]>; revision: number }> {
    return this.lock.run(async () => ({ rows: await this.range(query), revision: this.rev }));
  }

  async revision(): Promise<number> {
    return this.rev;
  }

  async transaction<T>(
    fn: (tx: BackendTx, context: TxContext) => Promise<{ result: T; writes: Writes }>,
  ): Promise<{ result: T; revision: number }> {
    // Reads are in-process map look-ups; there is nothing to prefetch.
    return this.lock.run(async () => {
      const tx: BackendTx = { get: (key) => this.read(key), list: (query) => this.range(query) };
      const now = this.now();
      const { result, writes } = await fn(tx, { revision: this.rev, now });
      if (writes.size > 0) {
        const revision = this.rev + 1;
        for (const [key, { record, log }] of [...writes].sort(([a], [b]) => compareKeys(a, b))) {
          if (record === null) await this.keyv.delete(key);
          else await this.keyv.set(key, { ...record, rev: revision });
          if (log && record !== null) this.log.push({ revision, key, version: record.ver, deleted: record.del === 1, at: now });
        }
        this.rev = revision;
      }
      return { result, revision: this.rev };
    });
  }

  async due(query: { now: number; tombstonesBefore: number; limit: number }): Promise<string[]> {
    return this.lock.run(async () => {
      const keys: string[] = [];
      for (const key of this.map.keys()) {
        if (keys.length >= query.limit) break;
        const record = await this.read(key).catch(() => undefined);
        if (!record) continue;
        if (record.del !== undefined ? record.at <= query.tombstonesBefore : record.exp !== undefined && record.exp <= query.now) {
          keys.push(key);
        }
      }
      return keys;
    });
  }

  async changes(query: ChangeQuery): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
    const changes: ChangeRow[] = [];
    for (const { at: _at, ...row } of this.log) {
      if (changes.length >= query.limit) break;
      if (row.revision > query.after && compareKeys(row.key, query.lo) >= 0 && compareKeys(row.key, query.hi) < 0) changes.push(row);
    }
    return { changes, revision: this.rev, compacted: this.compacted };
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    let n = 0;
    while (n < limit && n < this.log.length && this.log[n].at <= before) n++;
    if (n > 0) {
      this.compacted = Math.max(this.compacted, this.log[n - 1].revision);
      this.log = this.log.slice(n);
    }
    return n;
  }

  onForeignCommit(_listener: (event: CommitEvent) => void): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    this.map.clear();
    this.log = [];
  }

  private async read(key: string): Promise<StoredRecord | undefined> {
    let record: unknown;
    try {
      record = await this.keyv.get(key);
    } catch {
      throw corrupt(key);
    }
    if (record === undefined) return undefined;
    if (!isRecord(record)) throw corrupt(key);
    return record;
  }

  private async range(query: RangeQuery): Promise<Array<[string, StoredRecord]>> {
    const keys = [...this.map.keys()]
      .filter(
        (k) =>
          compareKeys(k, query.lo) >= 0 && compareKeys(k, query.hi) < 0 && (query.after === undefined || compareKeys(k, query.after) > 0),
      )
      .sort(compareKeys);
    const rows: Array<[string, StoredRecord]> = [];
    for (const key of keys) {
      if (rows.length >= query.limit) break;
      const record = await this.read(key).catch(() => undefined);
      if (record && record.del === undefined && (record.exp === undefined || record.exp > query.now)) rows.push([key, record]);
    }
    return rows;
  }
}
