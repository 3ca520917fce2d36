// Large committed record texts this process already holds, so that a transaction reading one of them again gets it
// without SQLite handing over the whole text once more. (On some machines every string over 128 KB costs a fresh
// mapping of memory: 0.6 ms for a 150 KB message list, read twice by an append-and-checkpoint step.)

/** Records whose stored text is at least this many bytes are remembered, and read first by size and tail. */
export const REMEMBER_FROM_BYTES = 128 * 1024;
/** How many of a text's last bytes identify it with its size: they hold the revision that wrote it, `"rev":N}}`. */
export const TAIL_BYTES = 64;
/** How much text is remembered at most (UTF-16 code units), the least recently used forgotten first. */
const REMEMBER_CHARS = 16 * 1024 * 1024;

interface Remembered {
  text: string;
  bytes: number;
  tail: Buffer;
}

/**
 * Texts of records this process read as committed, or committed itself, by key. A text is found only when the row
 * has the same size and the same last bytes: the same revision of the key (a revision is written once per file), so
 * a row that changed since is always read whole. Only texts known to be committed may be remembered.
 */
export class RecordTexts {
  private readonly texts = new Map<string, Remembered>();
  private chars = 0;

  /** The text of `key`'s row if it is the one remembered (same size in bytes, same last bytes). */
  find(key: string, bytes: number, tail: Uint8Array): string | undefined {
    const known = this.texts.get(key);
    if (known === undefined || known.bytes !== bytes || !known.tail.equals(tail)) return undefined;
    this.texts.delete(key); // most recently used last
    this.texts.set(key, known);
    return known.text;
  }

  /** Remembers a committed text of `key` (a smaller one only makes the key forgotten). */
  remember(key: string, text: string): void {
    this.forget(key);
    if (text.length < REMEMBER_FROM_BYTES / 4 || text.length > REMEMBER_CHARS / 4) return;
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes < REMEMBER_FROM_BYTES) return;
    this.texts.set(key, { text, bytes, tail: tailOf(text) });
    this.chars += text.length;
    for (const [old, { text: oldText }] of this.texts) {
      if (this.chars <= REMEMBER_CHARS) break;
      this.texts.delete(old);
      this.chars -= oldText.length;
    }
  }

  forget(key: string): void {
    const known = this.texts.get(key);
    if (known === undefined) return;
    this.texts.delete(key);
    this.chars -= known.text.length;
  }
}

/** The last {@link TAIL_BYTES} bytes of a text's UTF-8 (encoding only its end; a character cut there is dropped). */
function tailOf(text: string): Buffer {
  const end = Buffer.from(text.slice(-(TAIL_BYTES + 2)), 'utf8');
  return end.subarray(Math.max(0, end.length - TAIL_BYTES));
}
