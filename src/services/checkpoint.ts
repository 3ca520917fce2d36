// The checkpoint service: save, list, restore and delete a thread's state; export and import documents.
import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { BlackboardError, invalid } from '../errors.js';
import { checkName, idempotencyStorageKey, resolveScope, type Identity } from '../context.js';
import { lastPart, showRelative } from '../keyspace.js';
import type { Json } from '../store/types.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';
import { CheckpointBlobs } from './checkpoint-blobs.js';
import { FORMAT, corrupt, fromSaved, saved, sortKeys, type NamespaceDocument, type SavedRecord, type ThreadDocument } from './checkpoint-document.js';
import { threadInfoOf, type Session } from './session.js';

export { FORMAT, loadDocument, type NamespaceDocument, type SavedRecord, type ThreadDocument } from './checkpoint-document.js';

export interface CheckpointInfo {
  checkpointId: string;
  thread: string;
  run: string;
  label?: string;
  createdAt: string;
  /** the thread's revision when saved: pass it as ifRevision to restore only if nothing changed since */
  revision: number;
  records: number;
  /** JSON size of the saved state */
  bytes: number;
}

/** The stored manifest: record metadata plus the hash of each value; values live once in content-addressed blobs. */
const Manifest = z.object({
  format: z.literal(FORMAT),
  thread: z.string(),
  run: z.string(),
  label: z.string().optional(),
  createdAt: z.number(),
  revision: z.number(),
  bytes: z.number(),
  records: z.record(
    z.string(),
    z.object({ h: z.string(), ver: z.number().int().positive(), at: z.number(), by: z.string(), exp: z.number().optional() }),
  ),
});
type Manifest = z.infer<typeof Manifest>;

const CP_ID_RE = /^cp-[0-9a-z]{9}-[0-9a-f]{8}$/;

/**
 * Checkpoints of a thread: save, list, restore (atomically, all or nothing), delete, keep the newest N.
 * Storage grows with what changed: each distinct value is stored once (content-addressed, reference-counted),
 * and a checkpoint is a manifest of hashes.
 */
export class CheckpointService {
  private readonly blobs: CheckpointBlobs;

  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly keep: number,
  ) {
    this.blobs = new CheckpointBlobs(session.keys);
  }

  private get who(): Identity {
    return this.session.identity;
  }
  private get keys() {
    return this.session.keys;
  }

  async save(args: { label?: string; thread?: string; idempotencyKey?: string } = {}): Promise<CheckpointInfo> {
    if (args.label !== undefined && (typeof args.label !== 'string' || args.label.length > 200)) {
      throw invalid('label must be text of at most 200 characters.');
    }
    await this.session.refresh();
    const thread = args.thread ?? this.who.thread;
    const { result } = await this.store.transact(async (tx) => this.saveIn(tx, thread, args.label), {
      idempotencyKey: idempotencyStorageKey(this.who, 'checkpoint_save', args.idempotencyKey),
    });
    return result;
  }

  /** Saves inside an existing transaction (run_end uses it). */
  async saveIn(tx: StoreTx, thread: string, label?: string): Promise<CheckpointInfo> {
    const { run, entries } = await this.collect(tx, thread);
    // Ids sort in the order checkpoints were made: the revision the saving transaction commits above grows.
    const id = `cp-${(tx.revision + 1).toString(36).padStart(9, '0')}-${randomBytes(4).toString('hex')}`;
    const manifest: Manifest = { format: FORMAT, thread, run, createdAt: tx.now, revision: 0, bytes: 0, records: {} };
    if (label !== undefined) manifest.label = label;
    for (const [key, entry] of entries) {
      const h = await this.blobs.add(tx, entry.value);
      manifest.records[this.keys.relative(key)] = { h, ...metaOf(saved(entry)) };
      manifest.revision = Math.max(manifest.revision, entry.revision);
      manifest.bytes += Buffer.byteLength(JSON.stringify(entry.value), 'utf8');
    }
    await tx.putEntry(this.keys.checkpoint(id), { value: manifest as Json, version: 1, updatedAt: tx.now, updatedBy: this.session.by });
    await tx.putEntry(this.keys.checkpointIndex(thread, id), { value: 1, version: 1, updatedAt: tx.now, updatedBy: this.session.by });
    // Retention: the newest `keep` checkpoints of the thread stay.
    const ids = await this.idsIn(tx, thread);
    ids.push(id);
    for (const old of ids.slice(0, Math.max(0, ids.length - this.keep))) await this.deleteIn(tx, old);
    return info(id, manifest);
  }

  /** A thread's checkpoints, newest first, `limit` a page (default 20); `nextCursor` continues. */
  async list(args: { thread?: string; cursor?: string; limit?: number } = {}): Promise<{ checkpoints: CheckpointInfo[]; nextCursor?: string }> {
    const thread = args.thread === undefined ? this.who.thread : checkName('thread', args.thread);
    const limit = args.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw invalid('limit must be a whole number from 1 to 100.', { limit });
    const { entries } = await this.store.list({ ...this.keys.checkpointIndexRange(thread), limit: 10_000 });
    const ids = entries.reverse().map(([key]) => lastPart(key));
    let start = 0;
    if (args.cursor !== undefined) {
      start = ids.indexOf(args.cursor) + 1;
      if (start === 0) throw invalid('cursor names no checkpoint of this thread: pass back nextCursor exactly as returned, or omit it to start over.');
    }
    const checkpoints: CheckpointInfo[] = [];
    let at = start;
    for (; at < ids.length && checkpoints.length < limit; at++) {
      const manifest = Manifest.safeParse((await this.store.get(this.keys.checkpoint(ids[at])))?.value);
      if (manifest.success) checkpoints.push(info(ids[at], manifest.data));
    }
    return at < ids.length ? { checkpoints, nextCursor: ids[at - 1] } : { checkpoints };
  }

  async restore(args: { checkpointId: string; ifRevision?: number; idempotencyKey?: string }): Promise<{ checkpointId: string; thread: string; run: string; records: number }> {
    const id = checkId(args.checkpointId);
    if (args.ifRevision !== undefined && (!Number.isSafeInteger(args.ifRevision) || args.ifRevision < 0)) {
      throw invalid('ifRevision must be a whole number, 0 or more.');
    }
    const { result } = await this.store.transact(async (tx) => {
      const manifest = await this.manifestIn(tx, id);
      const doc: ThreadDocument = { format: FORMAT, kind: 'thread', thread: manifest.thread, run: manifest.run, records: {} };
      for (const [rel, { h, ...meta }] of Object.entries(manifest.records)) {
        const value = await this.blobs.read(tx, h);
        if (value === undefined) throw corrupt(`the saved value of ${JSON.stringify(showRelative(rel))} is missing or damaged`, { checkpointId: id });
        doc.records[rel] = { v: value, ...meta };
      }
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
      const records = await this.restoreIn(tx, doc);
      return { checkpointId: id, thread: manifest.thread, run: manifest.run, records };
    }, { idempotencyKey: idempotencyStorageKey(this.who, 'checkpoint_restore', args.idempotencyKey) });
    if (result.thread === this.who.thread) await this.session.refresh();
    return result;
  }

  async delete(args: { checkpointId: string; idempotencyKey?: string }): Promise<{ deleted: boolean }> {
    const id = checkId(args.checkpointId);
    const { result } = await this.store.transact(async (tx) => {
      if (!(await tx.get(this.keys.checkpoint(id)))) throw notFound(id);
      await this.deleteIn(tx, id); // a corrupt one can still be deleted
      return { deleted: true };
    }, { idempotencyKey: idempotencyStorageKey(this.who, 'checkpoint_delete', args.idempotencyKey) });
    return result;
  }

  /** The thread's state as a portable document (export --thread). */
  async exportThread(thread: string): Promise<ThreadDocument> {
    checkName('thread', thread);
    const { result } = await this.store.transact(async (tx) => {
      const { run, entries } = await this.collect(tx, thread);
      const records: Record<string, SavedRecord> = {};
      for (const [key, e] of entries) records[this.keys.relative(key)] = saved(e);
      return { format: FORMAT, kind: 'thread', thread, run, records: sortKeys(records) } satisfies ThreadDocument;
    });
    return result;
  }

  /** Every record of the namespace (export without --thread); checkpoints and idempotency records are left out. */
  async exportNamespace(): Promise<NamespaceDocument> {
    const records: Record<string, SavedRecord> = {};
    let after: string | undefined;
    for (;;) {
      const { entries } = await this.store.list({ ...this.keys.all(), after, limit: 1000 });
      for (const [key, e] of entries) {
        const rel = this.keys.relative(key);
        if (!this.keys.isCheckpointRecord(rel)) records[rel] = saved(e);
      }
      if (entries.length < 1000) break;
      after = entries[entries.length - 1][0];
    }
    return { format: FORMAT, kind: 'namespace', records: sortKeys(records) };
  }

  /** Loads a document (already validated by `loadDocument`) into the store, in one transaction. */
  async import(doc: ThreadDocument | NamespaceDocument): Promise<{ records: number }> {
    const { result } = await this.store.transact(async (tx) => {
      if (doc.kind === 'thread') return { records: await this.restoreIn(tx, doc) };
      for (const [rel, r] of Object.entries(doc.records)) await tx.putEntry(this.keys.absolute(rel), fromSaved(r));
      return { records: Object.keys(doc.records).length };
    });
    return result;
  }

  /** Replaces the thread's state by the document's, and moves the thread to the document's run. */
  private async restoreIn(tx: StoreTx, doc: ThreadDocument): Promise<number> {
    const { entries } = await this.collect(tx, doc.thread);
    // Records the document does not have are deleted; the others are rewritten, keeping their version when they are
    // unchanged since the save and continuing above it otherwise (a version never goes back or repeats).
    for (const [key] of entries) if (!Object.hasOwn(doc.records, this.keys.relative(key))) await tx.delete(key);
    for (const [rel, r] of Object.entries(doc.records)) await tx.putEntry(this.keys.absolute(rel), fromSaved(r));
    const metaKey = this.keys.threadInfo(doc.thread);
    const meta = threadInfoOf((await tx.get(metaKey))?.value) ?? { root: doc.thread, level: 0, runs: 1 };
    await tx.set(metaKey, { ...meta, run: doc.run } as Json, { by: this.session.by });
    return Object.keys(doc.records).length;
  }

  /** The live records that make up a thread's state, keyed by storage key. */
  private async collect(tx: StoreTx, thread: string): Promise<{ run: string; entries: Array<[string, Entry]> }> {
    const who = this.who;
    const run = threadInfoOf((await tx.get(this.keys.threadInfo(thread)))?.value)?.run ?? '';
    const state = this.keys.threadState(
      thread,
      resolveScope('thread', { ...who, thread }).id,
      resolveScope('run', { ...who, thread, run }).id,
      run,
    );
    const out: Array<[string, Entry]> = [];
    for (const range of state.ranges) out.push(...(await all(tx, range)));
    // Plans of the thread and of its run: the index entries and the plans they point at.
    for (const range of state.planIndexes) {
      for (const entry of await all(tx, range)) {
        out.push(entry);
        const planKey = this.keys.plan(lastPart(entry[0]));
        const plan = await tx.get(planKey);
        if (plan) out.push([planKey, plan]);
      }
    }
    for (const key of state.keys) {
      const entry = await tx.get(key);
      if (entry) out.push([key, entry]);
    }
    return { run, entries: out };
  }

  private async idsIn(tx: StoreTx, thread: string): Promise<string[]> {
    const rows = await tx.list({ ...this.keys.checkpointIndexRange(thread), limit: 10_000 });
    return rows.map(([key]) => lastPart(key));
  }

  private async manifestIn(tx: StoreTx, id: string): Promise<Manifest> {
    const entry = await tx.get(this.keys.checkpoint(id));
    if (!entry) throw notFound(id);
    const manifest = Manifest.safeParse(entry.value);
    if (!manifest.success) throw corrupt('its manifest is not a checkpoint document', { checkpointId: id });
    return manifest.data;
  }

  private async deleteIn(tx: StoreTx, id: string): Promise<void> {
    const entry = await tx.get(this.keys.checkpoint(id));
    if (!entry) throw notFound(id);
    // What can be read of a damaged manifest is released; the rest of it goes with it.
    const m = (entry.value ?? {}) as { thread?: unknown; records?: Record<string, { h?: unknown }> };
    for (const meta of Object.values(m.records ?? {})) if (typeof meta?.h === 'string') await this.blobs.drop(tx, meta.h);
    await tx.delete(this.keys.checkpoint(id));
    if (typeof m.thread === 'string') await tx.delete(this.keys.checkpointIndex(m.thread, id));
  }
}

/** Every live record of a range, page by page. */
async function all(tx: StoreTx, range: { lo: string; hi: string }): Promise<Array<[string, Entry]>> {
  const rows: Array<[string, Entry]> = [];
  let after: string | undefined;
  for (;;) {
    const page = await tx.list({ ...range, after, limit: 1000 });
    rows.push(...page);
    if (page.length < 1000) return rows;
    after = page[page.length - 1][0];
  }
}

const metaOf = ({ v: _v, ...meta }: SavedRecord): Omit<SavedRecord, 'v'> => meta;

function info(id: string, m: Manifest): CheckpointInfo {
  return {
    checkpointId: id,
    thread: m.thread,
    run: m.run,
    ...(m.label !== undefined ? { label: m.label } : {}),
    createdAt: new Date(m.createdAt).toISOString(),
    revision: m.revision,
    records: Object.keys(m.records).length,
    bytes: m.bytes,
  };
}

function notFound(id: string): BlackboardError {
  return new BlackboardError('NOT_FOUND', `There is no checkpoint "${id}". Use {tool:checkpoint_list} to see the checkpoints of a thread.`, { checkpointId: id });
}

function checkId(id: string): string {
  if (typeof id !== 'string' || !CP_ID_RE.test(id)) {
    throw invalid('checkpointId is not a checkpoint id. Use one returned by {tool:checkpoint_save} or {tool:checkpoint_list}.', { checkpointId: String(id).slice(0, 80) });
  }
  return id;
}
