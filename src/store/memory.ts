import Keyv from 'keyv';
import { compareKeys } from './keys.js';
import { Mutex } from './mutex.js';
import { serialize, deserialize, isRecord, corrupt } from './codec.js';
import type { Backend, BackendTx, RangeQuery, StoredRecord, Writes } from './types.js';

/**
 * `memory://`: a Keyv over a Map, for tests and throw-away sessions. One process only; everything is lost on exit.
 * Every operation holds one mutex, so a transaction's writes are seen all at once.
 */
export class MemoryBackend implements Backend {
  readonly description = 'memory:// (in this process only; nothing survives a restart)';
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
    fn: (tx: BackendTx, revision: number) => Promise<{ result: T; writes: Writes }>,
  ): Promise<{ result: T; revision: number }> {
    // Reads are in-process map look-ups; there is nothing to prefetch.
    return this.lock.run(async () => {
      const tx: BackendTx = { get: (key) => this.read(key), list: (query) => this.range(query) };
      const { result, writes } = await fn(tx, this.rev);
      if (writes.size > 0) {
        for (const [key, record] of writes) {
          if (record === null) await this.keyv.delete(key);
          else await this.keyv.set(key, record);
        }
        this.rev += 1;
      }
      return { result, revision: this.rev };
    });
  }

  async sweepExpired(now: number, limit: number): Promise<number> {
    return this.lock.run(async () => {
      let removed = 0;
      for (const key of [...this.map.keys()]) {
        if (removed >= limit) break;
        const record = await this.read(key).catch(() => undefined);
        if (record?.exp !== undefined && record.exp <= now) {
          await this.keyv.delete(key);
          removed++;
        }
      }
      return removed;
    });
  }

  onForeignCommit(): () => void {
    return () => {};
  }

  async close(): Promise<void> {
    this.map.clear();
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
          compareKeys(k, query.lo) >= 0 &&
          compareKeys(k, query.hi) < 0 &&
          (query.after === undefined || compareKeys(k, query.after) > 0),
      )
      .sort(compareKeys);
    const rows: Array<[string, StoredRecord]> = [];
    for (const key of keys) {
      if (rows.length >= query.limit) break;
      const record = await this.read(key).catch(() => undefined);
      if (record && (record.exp === undefined || record.exp > query.now)) rows.push([key, record]);
    }
    return rows;
  }
}
