// Large committed records this process already holds, parsed, so that a transaction reading one of them again takes
// it as it is: the database does not hand the whole text over once more and nothing parses it again. (An append to a
// 75 KB message list, then the checkpoint that saves it, used to read and parse the list twice per step.)
import { deepFreeze, frozenCopy } from './frozen.js';
import type { StoredRecord } from './types.js';

/** Records whose stored text is at least this many bytes are known, and read first by size and first characters. */
export const KNOWN_FROM_BYTES = 16 * 1024;
/**
 * How many of a stored text's first characters name the revision that wrote it: backends write it first
 * (`{"rev":N,…`, or in an envelope `{"value":{"rev":N,…`), and databases read a row's first characters without the
 * rest of it.
 */
export const HEAD_CHARS = 40;
/** How much is known at most, counted as the records' stored text (UTF-16 code units), least recently used forgotten first. */
const KNOWN_CHARS = 4 * 1024 * 1024;

/**
 * What a transaction wrote for one key: the record and its stored text (or, for a text written as bytes, their number
 * and the first {@link HEAD_CHARS} of them), or `null` when it removed the row.
 */
export type WrittenRow = [key: string, row: { text: string | WrittenBytes; record: StoredRecord } | null];

/** A stored text written as UTF-8 bytes: how many, and how it begins (taken as they were written). */
export interface WrittenBytes {
  bytes: number;
  head: string;
}

interface Known {
  /** frozen all the way down: every reader of the key shares it */
  record: StoredRecord;
  bytes: number;
  chars: number;
}

/**
 * Records this process read as committed, or committed itself, by key, each with the size of its stored text. A row is
 * taken for the known record only when it has the same size and its first characters name the same revision: a
 * revision is committed once per store, so a row that changed since is always read whole, and a row written with its
 * revision elsewhere (by an older version) is never taken for one. Only records known to be committed may be known. A
 * known record is frozen, all the way down: callers share it and cannot change it.
 */
export class KnownRecords {
  private readonly known = new Map<string, Known>();
  private chars = 0;

  /** `prefix`: how this backend's stored texts begin, up to the revision's digits (`{"rev":`). */
  constructor(
    private readonly prefix: string,
    readonly fromBytes = KNOWN_FROM_BYTES,
  ) {}

  /** Whether a record of `key` is held (a read of `key` may then take it by its row's size and first characters). */
  has(key: string): boolean {
    return this.known.has(key);
  }

  /** The keys held. */
  keys(): IterableIterator<string> {
    return this.known.keys();
  }

  /** The record held for `key`, the size of its stored text, and how that text begins (the revision that wrote it). */
  expected(key: string): { record: StoredRecord; bytes: number; head: string } | undefined {
    const known = this.known.get(key);
    return known && { record: known.record, bytes: known.bytes, head: `${this.prefix}${known.record.rev},` };
  }

  /** `key`'s record if its row is the one known: `bytes` of stored text whose first characters are `head`. */
  find(key: string, bytes: number, head: string): StoredRecord | undefined {
    const known = this.known.get(key);
    if (known === undefined || known.bytes !== bytes || this.revisionIn(head) !== known.record.rev) return undefined;
    this.known.delete(key); // most recently used last
    this.known.set(key, known);
    return known.record;
  }

  /**
   * Knows a committed record of `key` from now on, stored as `text` (one under the size, or not written revision
   * first, only makes the key forgotten). A record this process parsed is frozen all the way down as it is; one it
   * wrote (`written`), whose value may be a caller's own objects, is known as a frozen copy.
   */
  remember(key: string, text: string | WrittenBytes, record: StoredRecord, written = false): void {
    this.forget(key);
    // a text's length in code units, or of bytes at most its number of bytes (counted as that)
    const chars = typeof text === 'string' ? text.length : text.bytes;
    if (chars < this.fromBytes / 4 || chars > KNOWN_CHARS / 4) return;
    if (this.revisionIn(typeof text === 'string' ? text.slice(0, HEAD_CHARS) : text.head) !== record.rev) return;
    const bytes = typeof text === 'string' ? Buffer.byteLength(text, 'utf8') : text.bytes;
    if (bytes < this.fromBytes) return;
    const held = written ? Object.freeze({ ...record, v: frozenCopy(record.v) }) : deepFreeze(record);
    this.known.set(key, { record: held, bytes, chars });
    this.chars += chars;
    for (const [old, { chars }] of this.known) {
      if (this.chars <= KNOWN_CHARS) break;
      this.known.delete(old);
      this.chars -= chars;
    }
  }

  /**
   * Committed writes: large records are known from now on, every other written key forgotten. Never throws (it runs
   * after the commit, whose callers must hear that it succeeded): a record that cannot be held is forgotten.
   */
  committed(written: Iterable<WrittenRow>): void {
    for (const [key, row] of written) {
      try {
        if (row === null) this.forget(key);
        else this.remember(key, row.text, row.record, true);
      } catch {
        this.forget(key);
      }
    }
  }

  forget(key: string): void {
    const known = this.known.get(key);
    if (known === undefined) return;
    this.known.delete(key);
    this.chars -= known.chars;
  }

  /** Forgets everything (the store under it was replaced). */
  clear(): void {
    this.known.clear();
    this.chars = 0;
  }

  /** The revision a stored text's first characters name, if it was written revision first. */
  private revisionIn(head: string): number | undefined {
    if (!head.startsWith(this.prefix)) return undefined;
    const end = head.indexOf(',', this.prefix.length);
    if (end < 0) return undefined;
    const digits = head.slice(this.prefix.length, end);
    return /^\d{1,16}$/.test(digits) ? Number(digits) : undefined;
  }
}
