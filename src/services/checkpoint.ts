// The checkpoint service: save, list, restore and delete a thread's state.
import { randomUUID } from 'node:crypto';
import { BlackboardError, invalid } from '../errors.js';
import { checkName, idempotent, type CallOptions, type Identity } from '../context.js';
import { lastPart, showRelative } from '../keyspace.js';
import type { Json, KeyRange } from '../store/types.js';
import { jsonBytes } from '../store/json-text.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';
import { CheckpointBlobs, type BlobRef } from './checkpoint-blobs.js';
import { FORMAT, corrupt, saved, type ThreadDocument } from './checkpoint-document.js';
import {
  Manifest,
  allOf,
  checkCursor,
  checkId,
  idAt,
  infoOfIndex,
  infoOfManifest,
  newestIndexEntries,
  revisionOf,
  notFound,
  summaryOf,
  DEFAULT_LIST,
  headIn,
  headWithout,
  manifestRefs,
  setHead,
  MAX_LIST,
  metaOf,
  type Reader,
  type CheckpointInfo,
} from './checkpoint-manifest.js';
import { restoreState } from './checkpoint-restore.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { collectState, firstReads, prefetchForDelete } from './checkpoint-state.js';
import { checkThreadWrite } from './ownership.js';
import type { Session } from './session.js';

export { FORMAT, loadDocument, type NamespaceDocument, type SavedRecord, type ThreadDocument } from './checkpoint-document.js';
export type { CheckpointInfo } from './checkpoint-manifest.js';

/**
 * Checkpoints of a thread: save, list, restore (atomically), delete, keep the newest N. Storage grows with what
 * changed: values are content-addressed and reference-counted, an appended-to value stores only the appended part.
 */
export class CheckpointService {
  private readonly blobs: CheckpointBlobs;
  /** The newest checkpoint this service saved, by thread, with its manifest (a checkpoint's manifest never changes). */
  private readonly latest = new Map<string, { id: string; manifest: Manifest }>();

  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly keep: number,
    /** how long the plans of a run a restore leaves are kept */
    private readonly planTtlMs: number,
  ) {
    this.blobs = new CheckpointBlobs(session.keys);
  }

  private get who(): Identity {
    return this.session.identity;
  }
  private get keys() {
    return this.session.keys;
  }

  async save(args: { label?: string; thread?: string; idempotencyKey?: string }, call: CallOptions): Promise<CheckpointInfo> {
    if (args.label !== undefined && (typeof args.label !== 'string' || args.label.length > 200)) {
      throw invalid('label must be text of at most 200 characters.', { path: 'label' });
    }
    const thread = args.thread ?? this.who.thread;
    // The thread's info and head, and its records and ranges if it is at the caller's run, come with the first read;
    // the newest manifest is most likely the one this service saved last, which it holds.
    const fetched = { run: this.who.run };
    const { result } = await this.store.transact(async (tx) => this.saveIn(tx, thread, args.label, fetched), {
      ...idempotent(this.who, call, args),
      ...firstReads(this.keys, this.who, thread, fetched.run, [this.keys.checkpointHead(thread)]),
    });
    // The saved state is the thread's at its current run, read in the transaction; this session follows a run_start
    // made by another connection afterwards, only when there was one (a read less per save).
    if (thread === this.who.thread && result.run !== this.who.run) await this.session.refreshAfterWrite();
    return result;
  }

  /** Saves inside an existing transaction (run_end uses it); `fetched.run`: the run whose state ({@link firstReads}) it read. */
  async saveIn(tx: StoreTx, thread: string, label?: string, fetched: { run?: string } = {}): Promise<CheckpointInfo> {
    const head = await headIn(tx, this.keys, thread);
    const held = this.latest.get(thread);
    const known = head.latest !== undefined && head.latest === held?.id;
    const latest = head.latest !== undefined && !known ? [this.keys.checkpoint(head.latest)] : [];
    const { run, entries } = await collectState(tx, this.keys, this.who, thread, latest, fetched.run);
    // The previous checkpoint: records unchanged since it share its values, records that grew store what was appended.
    const prev =
      head.latest === undefined ? undefined : known ? held?.manifest.records : (await this.manifestOrNone(tx, head.latest))?.records;
    // Ids sort in the order checkpoints were made: the revision the saving transaction commits above grows.
    // a v4 UUID's first 8 hex digits are random (Node pools UUIDs; randomBytes costs a system call each)
    const id = idAt(tx.revision + 1, randomUUID().slice(0, 8));
    const manifest: Manifest = { format: FORMAT, thread, run, createdAt: tx.now, revision: 0, bytes: 0, records: {} };
    if (label !== undefined) manifest.label = label;
    // Hashes first, so that everything the writes below read comes in one round trip.
    const planned = entries.map(([key, entry]) => {
      const rel = this.keys.relative(key);
      const before = prev !== undefined && Object.hasOwn(prev, rel) ? prev[rel] : undefined;
      const unchanged = before !== undefined && before.ver === entry.version && before.at === entry.updatedAt;
      return { rel, entry, before, unchanged, d: unchanged ? undefined : this.blobs.digestOf(entry.value, before) };
    });
    await tx.prefetch([
      this.keys.checkpoint(id),
      this.keys.checkpointIndex(thread, id),
      ...planned.flatMap(({ before, d }) => this.blobs.keysOf(before, d)),
    ]);
    for (const { rel, entry, before, unchanged, d } of planned) {
      let ref: BlobRef;
      if (unchanged && before !== undefined && (await this.blobs.keep(tx, before))) {
        const { ver: _v, at: _a, by: _b, exp: _e, ...kept } = before;
        ref = { ...kept, b: before.b ?? jsonBytes(entry.value) };
      } else {
        ref = await this.blobs.add(tx, entry.value, before, d ?? this.blobs.digestOf(entry.value, before));
      }
      manifest.records[rel] = { ...ref, ...metaOf(saved(entry)) };
      manifest.revision = Math.max(manifest.revision, entry.revision);
      manifest.bytes += ref.b ?? 0;
    }
    await tx.putEntry(this.keys.checkpoint(id), { value: manifest as Json, version: 1, updatedAt: tx.now, updatedBy: this.session.by });
    await tx.putEntry(this.keys.checkpointIndex(thread, id), {
      value: summaryOf(manifest),
      version: 1,
      updatedAt: tx.now,
      updatedBy: this.session.by,
    });
    // Retention: the newest `keep` checkpoints of the thread stay.
    let count = head.count + 1;
    if (count > this.keep) {
      const rows = await tx.list({ ...this.keys.checkpointIndexRange(thread), limit: count - this.keep });
      await prefetchForDelete(
        tx,
        this.keys,
        rows.map(([key]) => lastPart(key)),
      );
      for (const [key] of rows) await this.deleteIn(tx, lastPart(key));
      count -= rows.length;
    }
    await setHead(tx, this.keys, thread, this.session.by, { count, latest: id });
    if (this.latest.size > 1000) this.latest.clear();
    this.latest.set(thread, { id, manifest }); // for the next save, which reads another's if it finds that one newest
    return infoOfManifest(id, manifest);
  }

  /** A thread's checkpoints, newest first, `limit` a page, then `nextCursor`; reads only the index. */
  async list(
    args: { thread?: string; limit?: number; cursor?: string } = {},
  ): Promise<{ checkpoints: CheckpointInfo[]; nextCursor?: string }> {
    const thread = args.thread === undefined ? this.who.thread : checkName('thread', args.thread, 'thread');
    const limit = args.limit ?? DEFAULT_LIST;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST)
      throw invalid(`limit must be a whole number from 1 to ${MAX_LIST}.`, { path: 'limit' });
    // a cursor names the thread it pages, so that another thread's cursor is refused rather than paging this one
    const listing = { label: thread, id: `checkpoints:${thread}` };
    const before = args.cursor === undefined ? undefined : checkCursor(decodeCursor(args.cursor, listing, '', 'thread'));
    // `top` only says where the window (which reaches the index's end) starts: this process's last save of the thread
    // is a floor for it, without reading the store's revision; checkpoints saved since by others come in a wider window.
    const saved = before === undefined ? this.latest.get(thread)?.id : undefined;
    const top = before !== undefined ? 0 : saved !== undefined ? revisionOf(saved) + 1 : (await this.store.revision()) + 1;
    const read = (range: KeyRange) => allOf((q) => this.store.list(q).then((p) => p.entries), range);
    const page = await newestIndexEntries(this.keys, read, thread, { limit, before, top });
    const checkpoints: CheckpointInfo[] = [];
    for (const [key, entry] of page.entries) {
      const id = lastPart(key);
      const listed = infoOfIndex(id, thread, entry.value);
      if (listed) {
        checkpoints.push(listed);
        continue;
      }
      const manifest = Manifest.safeParse((await this.store.get(this.keys.checkpoint(id)))?.value);
      if (manifest.success) checkpoints.push(infoOfManifest(id, manifest.data));
    }
    const last = page.entries[page.entries.length - 1];
    return { checkpoints, ...(page.more && last ? { nextCursor: encodeCursor(listing, '', lastPart(last[0])) } : {}) };
  }

  /** One checkpoint and the thread state it holds, as a thread document (the format of export); changes nothing. */
  async get(args: { checkpointId: string }): Promise<{ checkpoint: CheckpointInfo; state: ThreadDocument }> {
    const id = checkId(args.checkpointId);
    // Blobs never change once written, so plain reads are consistent; one that vanished was pruned meanwhile.
    const manifest = await this.manifestIn(this.store, id);
    try {
      return { checkpoint: infoOfManifest(id, manifest), state: await this.documentIn(this.store, id, manifest) };
    } catch (error) {
      await this.manifestIn(this.store, id); // NOT_FOUND when it was deleted while being read
      throw error;
    }
  }

  async restore(
    args: { checkpointId: string; ifRevision?: number; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<{ checkpointId: string; thread: string; run: string; records: number; budgetsKept: true }> {
    const id = checkId(args.checkpointId);
    if (args.ifRevision !== undefined && (!Number.isSafeInteger(args.ifRevision) || args.ifRevision < 0)) {
      throw invalid('ifRevision must be a whole number, 0 or more.', { path: 'ifRevision' });
    }
    const { result } = await this.store.transact(
      async (tx) => {
        const manifest = await this.manifestIn(tx, id);
        await checkThreadWrite(this.session, (key) => tx.get(key), manifest.thread);
        const doc = await this.documentIn(tx, id, manifest);
        if (args.ifRevision !== undefined) {
          const { entries } = await this.collect(tx, manifest.thread);
          const current = entries.reduce((max, [, e]) => Math.max(max, e.revision), 0);
          if (current > args.ifRevision) {
            throw new BlackboardError(
              'VERSION_CONFLICT',
              `The thread changed after revision ${args.ifRevision} (it is at ${current}), so restoring would silently drop those writes. Look at the thread's state, then restore with ifRevision: ${current} if you still want to.`,
              { currentRevision: current },
            );
          }
        }
        // Spending and others' work cannot be undone: budgets, and plans' steps in progress or done, stay as they are.
        const records = await this.restoreIn(tx, doc, true);
        return { checkpointId: id, thread: manifest.thread, run: manifest.run, records, budgetsKept: true as const };
      },
      // a restore moves the thread to the checkpoint's run: its retry comes from there, so the key counts per thread
      { ...idempotent(this.who, call, args, this.who.thread) },
    );
    if (result.thread === this.who.thread) await this.session.refreshAfterWrite();
    return result;
  }

  async delete(args: { checkpointId: string; idempotencyKey?: string }, call: CallOptions): Promise<{ deleted: boolean }> {
    const id = checkId(args.checkpointId);
    const { result } = await this.store.transact(
      async (tx) => {
        const entry = await tx.get(this.keys.checkpoint(id));
        if (!entry) throw notFound(id);
        // Deleting a checkpoint is a write into its thread: its owner's (or an ancestor's owner's) to make.
        const owner = manifestRefs(entry.value).thread;
        if (owner !== undefined) await checkThreadWrite(this.session, (key) => tx.get(key), owner);
        const thread = await this.deleteIn(tx, id); // a corrupt one can still be deleted
        if (thread !== undefined) await headWithout(tx, this.keys, thread, id, this.session.by);
        return { deleted: true };
      },
      { ...idempotent(this.who, call, args) },
    );
    return result;
  }

  /** The thread document a manifest describes; CHECKPOINT_CORRUPT when a value is missing or damaged. */
  private async documentIn(reader: Reader, id: string, manifest: Manifest): Promise<ThreadDocument> {
    const doc: ThreadDocument = { format: FORMAT, kind: 'thread', thread: manifest.thread, run: manifest.run, records: {} };
    for (const [rel, { h, n: _n, d: _d, b: _b, ...meta }] of Object.entries(manifest.records)) {
      const value = await this.blobs.read(reader, h);
      if (value === undefined)
        throw corrupt(`the saved value of ${JSON.stringify(showRelative(rel))} is missing or damaged`, { checkpointId: id });
      doc.records[rel] = { v: value, ...meta };
    }
    return doc;
  }

  /** Replaces the thread's state by the document's (see {@link restoreState}). */
  private restoreIn(tx: StoreTx, doc: ThreadDocument, keepWork = false): Promise<number> {
    return restoreState(tx, this.keys, this.who, this.session.by, doc, { keepWork, planTtlMs: this.planTtlMs });
  }

  /** The live records that make up a thread's state, keyed by storage key. */
  private collect(tx: StoreTx, thread: string): Promise<{ run: string; entries: Array<[string, Entry]> }> {
    return collectState(tx, this.keys, this.who, thread);
  }

  private async manifestOrNone(tx: StoreTx, id: string): Promise<Manifest | undefined> {
    const manifest = Manifest.safeParse((await tx.get(this.keys.checkpoint(id)))?.value);
    return manifest.success ? manifest.data : undefined;
  }

  private async manifestIn(reader: Reader, id: string): Promise<Manifest> {
    const entry = await reader.get(this.keys.checkpoint(id));
    if (!entry) throw notFound(id);
    const manifest = Manifest.safeParse(entry.value);
    if (!manifest.success) throw corrupt('its manifest is not a checkpoint document', { checkpointId: id });
    return manifest.data;
  }

  /** Deletes a checkpoint and releases its values; returns its thread when the manifest names one. */
  private async deleteIn(tx: StoreTx, id: string): Promise<string | undefined> {
    const entry = await tx.get(this.keys.checkpoint(id));
    if (!entry) throw notFound(id);
    // What can be read of a damaged manifest is released; the rest of it goes with it.
    const { thread, hashes } = manifestRefs(entry.value);
    for (const hash of hashes) await this.blobs.drop(tx, hash);
    await tx.delete(this.keys.checkpoint(id));
    if (thread === undefined) return undefined;
    await tx.delete(this.keys.checkpointIndex(thread, id));
    return thread;
  }
}

/** What reads a checkpoint: a transaction, or the store itself (blobs never change once written). */
