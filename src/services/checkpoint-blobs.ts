// Content-addressed checkpoint values: stored once, a grown value as its appended part, large values compressed.
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Keys } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { StoreTx } from '../store/versioned-store.js';
import { canonicalHashOf, digest, hashOf, type Digest } from './checkpoint-digest.js';

export { hashOf } from './checkpoint-digest.js';

/**
 * What a manifest keeps of a saved value: its hash; for arrays and strings its length `n` (an append's starting
 * point); `d`, how many appended parts lie between it and a whole stored value; `b`, its JSON size in bytes.
 */
export interface BlobRef {
  h: string;
  n?: number;
  d?: number;
  b?: number;
}

/** Longest chain of appended parts before a value is stored whole again (bounds the reads of a restore). */
export const MAX_DEPTH = 32;
/** Values whose JSON is at least this long are stored compressed when that saves a fifth or more. */
const COMPRESS_FROM = 2048;
/**
 * The author recorded on packed blobs. A blob by anyone else (`checkpoint`, as every blob before packing was) holds
 * the value itself; a packed blob holds `{z}` (the value's canonical JSON, deflated, base64) or `{base, tail}` (the
 * value of blob `base` with `tail` appended: array elements or string text).
 */
const PACKED = 'checkpoint-pack';

type Packed = { z: string } | { base: string; tail: Json[] | string };

/**
 * The blobs behind checkpoint manifests. A checkpoint adds a reference to each value it keeps and drops them when it
 * is deleted; an appended part holds a reference to its base; a blob with no reference left is removed. All of it
 * inside the caller's transaction.
 */
export class CheckpointBlobs {
  constructor(private readonly keys: Keys) {}

  /** One more reference to a value already stored (the previous checkpoint's, unchanged since); false if it is gone. */
  async keep(tx: StoreTx, ref: BlobRef): Promise<boolean> {
    const refs = await this.refs(tx, ref.h);
    if (refs === 0) return false;
    await this.setRefs(tx, ref.h, refs + 1);
    return true;
  }

  /** The digest `add` needs: of the value, and of its first `prev.n` elements when it may be stored as an append. */
  digestOf(value: Json, prev?: BlobRef): Digest {
    const base = prev?.n !== undefined && (prev.d ?? MAX_DEPTH) < MAX_DEPTH ? prev.n : undefined;
    return digest(value, base, base !== undefined ? prev?.h : undefined);
  }

  /** The keys `keep` (of `ref`) or `add` (of a value with digest `d`, after `prev`) reads, to fetch in one go. */
  keysOf(ref?: BlobRef, d?: Digest): string[] {
    return [...(ref ? [this.keys.blobRefs(ref.h)] : []), ...(d ? [this.keys.blobRefs(d.h), this.keys.blob(d.h)] : [])];
  }

  /**
   * Keeps `value` and counts one more reference to it; returns what the manifest keeps of it. When `prev` (the same
   * record in the previous checkpoint) is a prefix of `value`, only the appended part is stored.
   */
  async add(tx: StoreTx, value: Json, prev?: BlobRef, d: Digest = this.digestOf(value, prev)): Promise<BlobRef> {
    const { h, prefix } = d;
    const n = Array.isArray(value) ? value.length : typeof value === 'string' ? value.length : undefined;
    const out: BlobRef = { h, ...(n !== undefined ? { n } : {}), b: d.b };
    const refs = await this.refs(tx, h);
    if (refs > 0) {
      // Stored already, by some other checkpoint: its chain depth is not known here, so the next append starts over.
      await this.setRefs(tx, h, refs + 1);
      return { ...out, d: MAX_DEPTH };
    }
    if (prev?.n !== undefined && prefix !== undefined && prefix === prev.h && (await this.keep(tx, prev))) {
      const tail = Array.isArray(value) ? value.slice(prev.n) : (value as string).slice(prev.n);
      await this.put(tx, h, { base: prev.h, tail }, true);
      await this.setRefs(tx, h, 1);
      return { ...out, d: (prev.d ?? 0) + 1 };
    }
    // the value's own text: the hash's canonical text has every object's members sorted, and a restore writes back
    // what it reads, so a value whose members are in another order would come back changed (and at a new version)
    const text = JSON.stringify(value);
    if (text.length >= COMPRESS_FROM) {
      const z = deflateRawSync(text).toString('base64');
      if (z.length <= text.length * 0.8) {
        await this.put(tx, h, { z }, true);
        await this.setRefs(tx, h, 1);
        return { ...out, d: 0 };
      }
    }
    await this.put(tx, h, value, false);
    await this.setRefs(tx, h, 1);
    return { ...out, d: 0 };
  }

  /** Drops one reference; a blob goes when none is left, and an appended part then drops its base. */
  async drop(tx: StoreTx, hash: string): Promise<void> {
    for (let h: string | undefined = hash; h !== undefined; ) {
      const refs = await this.refs(tx, h);
      if (refs > 1) return this.setRefs(tx, h, refs - 1);
      const blob = await tx.get(this.keys.blob(h));
      await tx.delete(this.keys.blobRefs(h));
      await tx.delete(this.keys.blob(h));
      const base = blob?.updatedBy === PACKED ? (blob.value as { base?: unknown }).base : undefined;
      h = typeof base === 'string' ? base : undefined;
    }
  }

  /** The value with this hash, or `undefined` when it or a part it is built on is missing or damaged. */
  async read(tx: Pick<StoreTx, 'get'>, hash: string): Promise<Json | undefined> {
    const tails: Array<Json[] | string> = [];
    let value: Json | undefined;
    for (let h = hash; value === undefined; ) {
      if (tails.length > 10_000) return undefined; // a damaged chain
      const blob = await tx.get(this.keys.blob(h));
      if (!blob) return undefined;
      if (blob.updatedBy !== PACKED) {
        value = blob.value;
        break;
      }
      const packed = blob.value as Partial<Record<'z' | 'base' | 'tail', unknown>> | null;
      if (typeof packed?.z === 'string') {
        try {
          value = JSON.parse(inflateRawSync(Buffer.from(packed.z, 'base64')).toString('utf8')) as Json;
        } catch {
          return undefined;
        }
      } else if (typeof packed?.base === 'string' && (Array.isArray(packed.tail) || typeof packed.tail === 'string')) {
        tails.push(packed.tail as Json[] | string);
        h = packed.base;
      } else {
        return undefined;
      }
    }
    for (let i = tails.length - 1; i >= 0; i--) {
      const tail = tails[i];
      if (Array.isArray(value) && Array.isArray(tail)) value = value.concat(tail);
      else if (typeof value === 'string' && typeof tail === 'string') value += tail;
      else return undefined;
    }
    // a blob an earlier version stored is addressed by its canonical JSON's hash
    return hashOf(value as Json) === hash || canonicalHashOf(value as Json) === hash ? value : undefined;
  }

  private async put(tx: StoreTx, hash: string, value: Json | Packed, packed: boolean): Promise<void> {
    await tx.putEntry(this.keys.blob(hash), {
      value: value as Json,
      version: 1,
      updatedAt: tx.now,
      updatedBy: packed ? PACKED : 'checkpoint',
    });
  }

  private async setRefs(tx: StoreTx, hash: string, refs: number): Promise<void> {
    await tx.putEntry(this.keys.blobRefs(hash), { value: refs, version: 1, updatedAt: tx.now, updatedBy: 'checkpoint' });
  }

  private async refs(tx: StoreTx, hash: string): Promise<number> {
    const value = (await tx.get(this.keys.blobRefs(hash)))?.value;
    return typeof value === 'number' ? value : 0;
  }
}
