// One store transaction: reads of committed state, versioned writes (CAS, atomic updates, tombstones), value bounds.
import { BlackboardError, invalid } from '../errors.js';
import { isCorruptRecord } from './codec.js';
import { holdsNonFinite, jsonBytes, nesting, sameJson } from './json-text.js';
import { VERSION_FLOOR_KEY } from './keys.js';
import { applyUpdate, type UpdateOp } from './ops.js';
import type { BackendTx, Json, RangeQuery, RecordWrite, StoredRecord, TxContext, Writes } from './types.js';

/** A live record as services see it. */
export interface Entry {
  value: Json;
  /** per-key version: never decreases or repeats, across delete and re-create */
  version: number;
  /** the revision of the commit that wrote it */
  revision: number;
  updatedAt: number;
  updatedBy: string;
  expiresAt?: number;
}

export interface WriteOptions {
  /** the agent name recorded as `updatedBy` */
  by: string;
  /** compare-and-set: the version the key must have now; `0` = must not exist */
  ifVersion?: number;
  /** expiry; `undefined` keeps none on set and keeps the current expiry on update */
  ttlMs?: number;
}

export interface Limits {
  maxValueBytes: number;
  maxDepth: number;
}

export const toEntry = (record: StoredRecord): Entry => ({
  value: record.v,
  version: record.ver,
  revision: record.rev,
  updatedAt: record.at,
  updatedBy: record.by,
  ...(record.exp !== undefined ? { expiresAt: record.exp } : {}),
});

/** The record if it is live: not a tombstone and not expired at `now`. */
export const live = (record: StoredRecord | undefined, now: number): StoredRecord | undefined =>
  record && record.del === undefined && (record.exp === undefined || record.exp > now) ? record : undefined;

/** What a transaction's own writes look like when it reads them back before commit. */
const pending = (record: RecordWrite, revision: number): StoredRecord => ({ ...record, rev: revision + 1 });

/**
 * The writes of one transaction, decided from its reads. Reads see the transaction's own earlier writes. Nothing is
 * applied unless the whole function returns. The function may be run again by an optimistic backend, so it must
 * decide everything from its reads: a fresh `StoreTx` is made for every run.
 */
export class StoreTx {
  readonly writes: Writes = new Map();
  private floor?: number;

  constructor(
    private readonly tx: BackendTx,
    private readonly context: TxContext,
    private readonly limits: Limits,
    private readonly logged: (key: string) => boolean,
  ) {}

  /** the committed revision this transaction's reads start from; its writes commit above it */
  get revision(): number {
    return this.context.revision;
  }

  /** the store's clock when the transaction began */
  get now(): number {
    return this.context.now;
  }

  async get(key: string): Promise<Entry | undefined> {
    const record = live(await this.raw(key), this.now);
    return record && toEntry(record);
  }

  /**
   * Reads keys this transaction is about to get or write in one round trip where the backend can (keys known only
   * after a first read, such as those numbered by a counter): many writes of new keys then cost one read, not one each.
   */
  async prefetch(keys: string[]): Promise<void> {
    const wanted = keys.filter((key) => !this.writes.has(key));
    if (this.floor === undefined) wanted.push(VERSION_FLOOR_KEY); // a new key's version starts above it
    if (wanted.length > 0) await this.tx.prefetch?.(wanted);
  }

  /** Writes `value` and returns the new entry; fails with VERSION_CONFLICT when `ifVersion` does not match. */
  async set(key: string, value: Json, options: WriteOptions): Promise<Entry> {
    const raw = await this.rawForOverwrite(key);
    checkVersion(live(raw, this.now), options.ifVersion);
    return this.put(key, value, raw, options.by, options.ttlMs !== undefined ? this.now + options.ttlMs : undefined);
  }

  /** Atomic read-modify-write; keeps the current expiry unless `ttlMs` is given. */
  async update(key: string, op: UpdateOp, operand: Json, options: WriteOptions): Promise<Entry> {
    this.checkValue(operand);
    const raw = await this.raw(key);
    const current = live(raw, this.now);
    checkVersion(current, options.ifVersion);
    const value = applyUpdate(op, current?.v, operand);
    const exp = options.ttlMs !== undefined ? this.now + options.ttlMs : current?.exp;
    return this.put(key, value, raw, options.by, exp);
  }

  /**
   * Deletes the key, leaving a tombstone that keeps its version (so a re-create continues above it); `false` when it
   * did not exist.
   */
  async delete(key: string, options: { ifVersion?: number; by?: string } = {}): Promise<boolean> {
    const current = live(await this.rawForOverwrite(key), this.now);
    checkVersion(current, options.ifVersion);
    if (!current) return false;
    this.write(key, { v: null, ver: current.ver, at: this.now, by: options.by ?? current.by, del: 1 });
    return true;
  }

  /** Turns the key's record, expired or not, into a tombstone at its version (the sweeper expiring a record). */
  async expire(key: string): Promise<void> {
    const raw = await this.raw(key);
    if (raw && raw.del === undefined) this.write(key, { v: null, ver: raw.ver, at: this.now, by: raw.by, del: 1 });
  }

  /** Runs `fn`; if it throws, the writes it made are undone (earlier writes of the transaction stay) and it rethrows. */
  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    const before = new Map(this.writes);
    try {
      return await fn();
    } catch (error) {
      this.writes.clear();
      for (const [key, write] of before) this.writes.set(key, write);
      throw error;
    }
  }

  /** Live records of a range, as committed before this transaction (its own writes are not merged in). */
  async list(query: Omit<RangeQuery, 'now'>): Promise<Array<[string, Entry]>> {
    const rows = await this.tx.list({ ...query, now: this.now });
    return rows.map(([key, record]) => [key, toEntry(record)]);
  }

  /** Deletes every live record of `[lo, hi)` (tombstones stay); returns how many. */
  async deleteRange(lo: string, hi: string, by?: string): Promise<number> {
    let count = 0;
    let after: string | undefined;
    for (;;) {
      const page = await this.tx.list({ lo, hi, after, limit: 500, now: this.now });
      for (const [key] of page) if (await this.delete(key, { by })) count++;
      if (page.length < 500) return count;
      after = page[page.length - 1][0];
    }
  }

  /**
   * Puts an entry as given — value, time, author, expiry — for checkpoint restores and imports. Its version is the
   * given one unless that would make the key's version go back or repeat: then it continues above the current one.
   * The size bound is the caller's to apply: checkpoint documents are internal and may exceed it.
   */
  async putEntry(key: string, entry: Omit<Entry, 'revision'>): Promise<void> {
    const raw = await this.raw(key);
    // the very record again (an unchanged key restored, a bundle imported twice) keeps its version
    const sameWrite = raw !== undefined && raw.del === undefined && raw.ver === entry.version && sameJson(raw.v, entry.value);
    // ... and when nothing else differs either, it is not written at all: no new revision, nothing in the change log
    if (sameWrite && raw.at === entry.updatedAt && raw.by === entry.updatedBy && raw.exp === entry.expiresAt) return;
    const base = raw === undefined ? await this.versionFloor() : sameWrite ? entry.version - 1 : raw.ver;
    this.write(key, {
      v: entry.value,
      ver: Math.max(entry.version, base + 1),
      at: entry.updatedAt,
      by: entry.updatedBy,
      ...(entry.expiresAt !== undefined ? { exp: entry.expiresAt } : {}),
    });
  }

  /** Removes a record physically, tombstone included, without a change log entry (the sweeper's job). */
  remove(key: string): void {
    this.writes.set(key, { record: null, log: false });
  }

  /** The raw record: tombstones and expired records included, this transaction's own writes first. */
  async raw(key: string): Promise<StoredRecord | undefined> {
    const own = this.writes.get(key);
    if (own) return own.record === null ? undefined : pending(own.record, this.revision);
    return this.tx.get(key);
  }

  /**
   * The raw record for a write that does not need the old value (set, delete): a corrupt record stands as a live one
   * at a version above any the key can have had (the revision and the floor bound every version), so it can be
   * overwritten or deleted, and a stale `ifVersion` still cannot match it.
   */
  private async rawForOverwrite(key: string): Promise<StoredRecord | undefined> {
    try {
      return await this.raw(key);
    } catch (error) {
      if (!isCorruptRecord(error)) throw error;
      const ver = Math.max(await this.versionFloor(), this.revision) + 1;
      return { v: null, ver, rev: this.revision, at: this.now, by: 'unknown' };
    }
  }

  /**
   * Versions continue above this for a key with no record at all: the highest version of any tombstone the sweeper
   * has removed (0 before any), so a key re-created after its tombstone is gone still never repeats a version.
   */
  async versionFloor(): Promise<number> {
    if (this.floor === undefined) {
      const record = await this.raw(VERSION_FLOOR_KEY);
      this.floor = typeof record?.v === 'number' ? record.v : 0;
    }
    return this.floor;
  }

  /** Raises the version floor (the sweeper, when it removes tombstones). */
  async raiseVersionFloor(version: number): Promise<void> {
    const floor = await this.versionFloor();
    if (version <= floor) return;
    this.floor = version;
    this.writes.set(VERSION_FLOOR_KEY, { record: { v: version, ver: 1, at: this.now, by: 'sweeper' }, log: false });
  }

  /** Bounds a value by size and depth; throws VALUE_TOO_LARGE or INVALID_ARGUMENT. */
  checkValue(value: Json): number {
    if (value === undefined) throw invalid('value is required: any JSON value (null included).');
    if (nesting(value, this.limits.maxDepth) > this.limits.maxDepth) {
      throw invalid(`The value nests deeper than ${this.limits.maxDepth} levels; flatten it.`, { maxDepth: this.limits.maxDepth });
    }
    if (holdsNonFinite(value)) {
      throw invalid(
        'The value holds a number JSON cannot keep (NaN or Infinity; a literal such as 1e400 is beyond a double): it would be stored as null. Nothing was changed.',
      );
    }
    let bytes: number;
    try {
      bytes = jsonBytes(value);
    } catch (error) {
      // a value JSON cannot write (a BigInt, from code): the caller's input, not the store's failure
      throw invalid(`The value is not JSON: ${(error as Error).message}. Nothing was changed.`);
    }
    // a function, a symbol or a toJSON that returns nothing has no JSON text: stored, it would be a corrupt record
    if (bytes === 0) throw invalid(`The value is not JSON: a ${describeNonJson(value)} has no JSON text. Nothing was changed.`);
    if (bytes > this.limits.maxValueBytes) {
      throw new BlackboardError(
        'VALUE_TOO_LARGE',
        `The value is ${bytes} bytes; the limit is ${this.limits.maxValueBytes}. Store a smaller value or split it over several keys.`,
        { bytes, maxValueBytes: this.limits.maxValueBytes },
      );
    }
    return bytes;
  }

  private async put(key: string, value: Json, raw: StoredRecord | undefined, by: string, exp?: number): Promise<Entry> {
    this.checkValue(value);
    const base = raw?.ver ?? (await this.versionFloor());
    const record: RecordWrite = { v: value, ver: base + 1, at: this.now, by, ...(exp !== undefined ? { exp } : {}) };
    this.write(key, record);
    return toEntry(pending(record, this.revision));
  }

  private write(key: string, record: RecordWrite): void {
    this.writes.set(key, { record, log: this.logged(key) });
  }
}

/** What a value without JSON text is, for its error. */
function describeNonJson(value: unknown): string {
  return typeof value === 'object' && value !== null ? 'value whose toJSON returns nothing' : typeof value;
}

function checkVersion(current: StoredRecord | undefined, ifVersion: number | undefined): void {
  if (ifVersion === undefined) return;
  const currentVersion = current?.ver ?? 0;
  if (currentVersion !== ifVersion) {
    throw new BlackboardError(
      'VERSION_CONFLICT',
      ifVersion === 0
        ? `The key already exists at version ${currentVersion}. Read it, then retry with ifVersion: ${currentVersion} if you still want to write.`
        : `Expected version ${ifVersion} but the current version is ${currentVersion}${currentVersion === 0 ? ' (the key does not exist)' : ''}. Read the current value, reconcile, and retry with ifVersion: ${currentVersion}.`,
      { currentVersion, ...currentValue(current) },
    );
  }
}

/** A conflict's current value, when small enough (≤ 2 KiB of JSON) to save the caller another read. */
function currentValue(current: StoredRecord | undefined): { current?: Json } {
  if (current === undefined || current.del === 1) return {};
  return jsonBytes(current.v) <= 2048 ? { current: current.v } : {};
}
