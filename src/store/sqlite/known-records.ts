// Large committed records this process already holds, parsed, so that a transaction reading one of them again takes
// it as it is: SQLite does not hand the whole text over once more and nothing parses it again. (An append to a
// 75 KB message list, then the checkpoint that saves it, used to parse the list twice per step.)
import { deepFreeze } from '../frozen.js';
import type { StoredRecord } from '../types.js';

/** Records whose stored text is at least this many bytes are known, and read first by size and tail. */
export const KNOWN_FROM_BYTES = 16 * 1024;
/**
 * How many of a text's first bytes identify it with its size: they hold the revision that wrote it,
 * `{"value":{"rev":N,` (the writer puts it first; SQLite reads a row's first bytes without the rest of its pages).
 */
export const HEAD_BYTES = 40;
/** How a text that names its revision first begins; a row written otherwise (by an older version) is never known. */
const REVISION_FIRST = '{"value":{"rev":';
/** How much is known at most, counted as the records' stored text (UTF-16 code units), least recently used forgotten first. */
const KNOWN_CHARS = 4 * 1024 * 1024;

interface Known {
  /** frozen all the way down: every reader of the key shares it */
  record: StoredRecord;
  bytes: number;
  head: Buffer;
  chars: number;
}

/**
 * Records this process read as committed, or committed itself, by key, each with the size and first bytes of its
 * stored text. A record is found only when the row has the same size and the same first bytes, which name the revision
 * that wrote it: the same revision of the key (a revision is committed once per file), so a row that changed since is
 * always read whole. Only records known to be committed may be known. A known record is frozen, all the way down:
 * callers share it and cannot change it.
 */
export class KnownRecords {
  private readonly known = new Map<string, Known>();
  private chars = 0;

  constructor(private readonly fromBytes = KNOWN_FROM_BYTES) {}

  /** `key`'s record if its row is the one known (same size in bytes, same first bytes). */
  find(key: string, bytes: number, head: Uint8Array): StoredRecord | undefined {
    const known = this.known.get(key);
    if (known === undefined || known.bytes !== bytes || !known.head.equals(head)) return undefined;
    this.known.delete(key); // most recently used last
    this.known.set(key, known);
    return known.record;
  }

  /**
   * Knows a committed record of `key` from now on, stored as `text` (a smaller one only makes the key forgotten).
   * Freezes the record all the way down.
   */
  remember(key: string, text: string, record: StoredRecord): void {
    this.forget(key);
    if (text.length < this.fromBytes / 4 || text.length > KNOWN_CHARS / 4 || !text.startsWith(REVISION_FIRST)) return;
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes < this.fromBytes) return;
    this.known.set(key, { record: deepFreeze(record), bytes, head: headOf(text), chars: text.length });
    this.chars += text.length;
    for (const [old, { chars }] of this.known) {
      if (this.chars <= KNOWN_CHARS) break;
      this.known.delete(old);
      this.chars -= chars;
    }
  }

  forget(key: string): void {
    const known = this.known.get(key);
    if (known === undefined) return;
    this.known.delete(key);
    this.chars -= known.chars;
  }
}

/** The first {@link HEAD_BYTES} bytes of a text's UTF-8 (encoding only its start). */
function headOf(text: string): Buffer {
  return Buffer.from(text.slice(0, HEAD_BYTES), 'utf8').subarray(0, HEAD_BYTES);
}
