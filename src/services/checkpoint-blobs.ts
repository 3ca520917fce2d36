// Content-addressed values for checkpoints: each distinct value stored once, with a reference count.
import { createHash } from 'node:crypto';
import type { Keys } from '../keyspace.js';
import { canonicalJson } from '../store/ops.js';
import type { Json } from '../store/types.js';
import type { StoreTx } from '../store/versioned-store.js';

/** The address of a value: SHA-256 of its canonical JSON, so equal values share one blob. */
export const hashOf = (value: Json): string => createHash('sha256').update(canonicalJson(value)).digest('hex');

/**
 * The blobs behind checkpoint manifests. A checkpoint adds a reference to each value it keeps and drops them when it
 * is deleted; a value with no reference left is removed. All of it inside the caller's transaction.
 */
export class CheckpointBlobs {
  constructor(private readonly keys: Keys) {}

  /** Keeps `value` (once) and counts one more reference to it; returns its hash. */
  async add(tx: StoreTx, value: Json): Promise<string> {
    const hash = hashOf(value);
    const refs = await this.refs(tx, hash);
    if (refs === 0) await tx.putEntry(this.keys.blob(hash), { value, version: 1, updatedAt: tx.now, updatedBy: 'checkpoint' });
    await tx.putEntry(this.keys.blobRefs(hash), { value: refs + 1, version: 1, updatedAt: tx.now, updatedBy: 'checkpoint' });
    return hash;
  }

  /** Drops one reference; the value goes when none is left. */
  async drop(tx: StoreTx, hash: string): Promise<void> {
    const refs = await this.refs(tx, hash);
    if (refs <= 1) {
      await tx.delete(this.keys.blobRefs(hash));
      await tx.delete(this.keys.blob(hash));
    } else {
      await tx.putEntry(this.keys.blobRefs(hash), { value: refs - 1, version: 1, updatedAt: tx.now, updatedBy: 'checkpoint' });
    }
  }

  /** The value with this hash, or `undefined` when it is missing or does not match its hash (damaged). */
  async read(tx: StoreTx, hash: string): Promise<Json | undefined> {
    const blob = await tx.get(this.keys.blob(hash));
    return blob && hashOf(blob.value) === hash ? blob.value : undefined;
  }

  private async refs(tx: StoreTx, hash: string): Promise<number> {
    const value = (await tx.get(this.keys.blobRefs(hash)))?.value;
    return typeof value === 'number' ? value : 0;
  }
}
