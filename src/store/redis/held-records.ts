// Large records this process holds, for the Redis backend: what its reading scripts are told is held, and what their
// replies mean. A held record comes back as its revision alone (its text stays in Redis), so it is neither sent again
// nor parsed again.
import { RECORD_PREFIX } from '../codec.js';
import { KnownRecords, type WrittenRow } from '../known-records.js';
import { compareKeys } from '../keys.js';
import type { StoredRecord } from '../types.js';
import { decode, type FetchedRow, revOf } from './records.js';

/**
 * A record as a reading script gave it: its revision as the commit script checks it (0 absent, -1 unreadable), and the
 * record (parsed on first use; a corrupt text throws CORRUPT_RECORD then), or nothing when absent.
 */
export class Fetched implements FetchedRow {
  constructor(
    private readonly key: string,
    readonly rev: number,
    private readonly raw: string | null,
    private record: StoredRecord | undefined,
    /** holds a large record read whole (under the epoch of the reply it came in) */
    private readonly hold: (key: string, raw: string, record: StoredRecord) => void,
  ) {}

  /** The record, or undefined when there is none; a large text read whole is held from now on. */
  get(): StoredRecord | undefined {
    if (this.record !== undefined || this.raw === null) return this.record;
    const record = decode(this.key, this.raw);
    this.hold(this.key, this.raw, record);
    this.record = record;
    return record;
  }
}

/** What a reading script was told is held, to read its reply by. */
export interface Asked {
  /** the script's arguments: the epoch, then key, size and revision of each record (size 0: none held) */
  args: string[];
  /** the records those arguments name as held, by key, with the size of their text */
  held: Map<string, { record: StoredRecord; bytes: number }>;
}

/** The large records this process holds, under the board's epoch (the one they were read or written in). */
export class HeldRecords {
  private readonly known = new KnownRecords(RECORD_PREFIX);
  /** the epoch of the board the held records come from ('' when it has none: then nothing is taken as held) */
  private epoch = '';

  /** What to tell a script that reads `keys` (each named, held or not). */
  ask(keys: string[]): Asked {
    const args = [this.epoch];
    const held: Asked['held'] = new Map();
    for (const key of keys) {
      const expected = this.known.expected(key);
      args.push(key, expected ? String(expected.bytes) : '0', expected ? String(expected.record.rev) : '0');
      if (expected) held.set(key, { record: expected.record, bytes: expected.bytes });
    }
    return { args, held };
  }

  /** What to tell a listing of the keys from `from` (inclusive, or after it) to `to`: the held ones among them. */
  askRange(from: string, to: string): Asked {
    const keys = [...this.known.keys()].filter((key) => compareKeys(key, from) >= 0 && compareKeys(key, to) < 0);
    return this.ask(keys);
  }

  /** Takes the board's epoch from a script's reply: another one than the held records' means none of them holds. */
  adopt(epoch: unknown): void {
    const now = typeof epoch === 'string' ? epoch : '';
    if (now === this.epoch) return;
    this.known.clear();
    this.epoch = now;
  }

  /**
   * A value of a script's reply for `key` (its text, the revision of the record held, or null: absent); `epoch`: the
   * board's epoch in the same reply. A text is held once parsed, if the held records are still of that epoch.
   */
  fetched(key: string, value: unknown, asked: Asked, epoch: unknown): Fetched {
    if (typeof value === 'number') {
      const held = asked.held.get(key);
      if (held?.record.rev !== value) throw new Error(`the store answered with a record of ${key} this process does not hold`);
      this.known.find(key, held.bytes, `${RECORD_PREFIX}${value},`); // used: forgotten last
      return new Fetched(key, value, null, held.record, () => {});
    }
    const raw = typeof value === 'string' ? value : null;
    return new Fetched(key, revOf(raw), raw, undefined, (k, text, record) => {
      if (epoch === this.epoch) this.known.remember(k, text, record);
    });
  }

  /** Records this process committed (texts as stored): the large ones are held from now on, other written keys forgotten. */
  committed(written: WrittenRow[]): void {
    this.known.committed(written);
  }
}
