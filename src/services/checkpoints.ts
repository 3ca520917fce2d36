import { createHash, randomBytes } from 'node:crypto';
import { BlackboardError, invalid } from '../errors.js';
import { checkName, dataRange, idempotencyStorageKey, internalKey, internalRange, resolveScope, type Identity } from '../context.js';
import { DEFAULT_NAMESPACE_TOKEN, SEP, prefixEnd, storageKey } from '../store/keys.js';
import { canonicalJson } from '../store/ops.js';
import type { Json } from '../store/types.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';
import type { Services } from './index.js';
import type { Session, ThreadInfo } from './session.js';

/** The current checkpoint/bundle format. Older formats are migrated on load (see {@link loadDocument}). */
export const FORMAT = 2;

/** One saved record, as stored: value, version, time (epoch ms), author, expiry. */
export interface SavedRecord {
  v: Json;
  ver: number;
  at: number;
  by: string;
  exp?: number;
}

/**
 * A thread's whole state as portable, versioned JSON: what `checkpoint_save` keeps, what `export --thread` writes
 * and what `import` reads. Keys are relative to the namespace (`<scope>\u001f<key>`), so a document restores into
 * the namespace it is loaded in.
 */
export interface ThreadDocument {
  format: typeof FORMAT;
  kind: 'thread';
  thread: string;
  run: string;
  records: Record<string, SavedRecord>;
}

/** Every record of a namespace (`export` without `--thread`). */
export interface NamespaceDocument {
  format: typeof FORMAT;
  kind: 'namespace';
  records: Record<string, SavedRecord>;
}

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
interface Manifest {
  format: typeof FORMAT;
  thread: string;
  run: string;
  label?: string;
  createdAt: number;
  revision: number;
  bytes: number;
  records: Record<string, { h: string; ver: number; at: number; by: string; exp?: number }>;
}

const CP_ID_RE = /^cp-[0-9a-z]{9}-[0-9a-f]{8}$/;

const corrupt = (why: string, details?: Record<string, unknown>): BlackboardError =>
  new BlackboardError(
    'CHECKPOINT_CORRUPT',
    `The checkpoint cannot be used: ${why}. Nothing was changed. Restore another checkpoint (checkpoint_list) or delete this one.`,
    details,
  );

const hashOf = (value: Json): string => createHash('sha256').update(canonicalJson(value)).digest('hex');

/**
 * Checkpoints of a thread: save, list, restore (atomically, all or nothing), delete, keep the newest N.
 * Storage grows with what changed: each distinct value is stored once (content-addressed, reference-counted),
 * and a checkpoint is a manifest of hashes.
 */
/** The services whose records make up a thread's state; a checkpoint asks them where their records live. */
export type ThreadStateOwners = Pick<Services, 'plans' | 'scratchpad' | 'finalizer' | 'budget' | 'lifecycle' | 'history'>;

export class CheckpointService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly owners: ThreadStateOwners,
    private readonly keep: number,
  ) {}

  private get who(): Identity {
    return this.session.identity;
  }
  private manifestKey(id: string): string {
    return internalKey(this.who, 'cp', 'all', id);
  }
  private indexKey(thread: string, id: string): string {
    return internalKey(this.who, 'cp-index', thread, id);
  }
  private blobKey(hash: string): string {
    return internalKey(this.who, 'cp-blob', 'v', hash);
  }
  private refKey(hash: string): string {
    return internalKey(this.who, 'cp-ref', 'v', hash);
  }
  private prefix(): string {
    return storageKey('d', this.who.namespace ?? DEFAULT_NAMESPACE_TOKEN, '');
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
    // Ids sort in the order checkpoints were made: the store revision of the saving transaction is unique and grows.
    const id = `cp-${(tx.revision + 1).toString(36).padStart(9, '0')}-${randomBytes(4).toString('hex')}`;
    const manifest: Manifest = { format: FORMAT, thread, run, createdAt: tx.now, revision: 0, bytes: 0, records: {} };
    if (label !== undefined) manifest.label = label;
    const rel = this.prefix().length;
    for (const [key, entry] of entries) {
      const hash = hashOf(entry.value);
      manifest.records[key.slice(rel)] = {
        h: hash,
        ver: entry.version,
        at: entry.updatedAt,
        by: entry.updatedBy,
        ...(entry.expiresAt !== undefined ? { exp: entry.expiresAt } : {}),
      };
      manifest.revision = Math.max(manifest.revision, entry.revision);
      manifest.bytes += Buffer.byteLength(JSON.stringify(entry.value), 'utf8');
      await this.addRef(tx, hash, entry.value);
    }
    await tx.putEntry(this.manifestKey(id), { value: manifest as unknown as Json, version: 1, updatedAt: tx.now, updatedBy: this.session.by });
    await tx.putEntry(this.indexKey(thread, id), { value: 1, version: 1, updatedAt: tx.now, updatedBy: this.session.by });
    // Retention: the newest `keep` checkpoints of the thread stay.
    const ids = await this.idsIn(tx, thread);
    ids.push(id);
    for (const old of ids.slice(0, Math.max(0, ids.length - this.keep))) await this.deleteIn(tx, old);
    return info(id, manifest);
  }

  async list(args: { thread?: string } = {}): Promise<{ checkpoints: CheckpointInfo[] }> {
    const thread = args.thread === undefined ? this.who.thread : checkName('thread', args.thread);
    const { entries } = await this.store.list({ ...internalRange(this.who, 'cp-index', thread), limit: 10_000 });
    const checkpoints: CheckpointInfo[] = [];
    for (const [key] of entries.reverse()) {
      const id = key.slice(key.lastIndexOf(SEP) + 1);
      const entry = await this.store.get(this.manifestKey(id));
      if (entry) checkpoints.push(info(id, entry.value as unknown as Manifest));
    }
    return { checkpoints };
  }

  async restore(args: { checkpointId: string; ifRevision?: number; idempotencyKey?: string }): Promise<{ checkpointId: string; thread: string; run: string; records: number }> {
    const id = checkId(args.checkpointId);
    if (args.ifRevision !== undefined && (!Number.isSafeInteger(args.ifRevision) || args.ifRevision < 0)) {
      throw invalid('ifRevision must be a whole number, 0 or more.');
    }
    const { result } = await this.store.transact(async (tx) => {
      const manifest = await this.manifestIn(tx, id);
      const doc: ThreadDocument = { format: FORMAT, kind: 'thread', thread: manifest.thread, run: manifest.run, records: {} };
      for (const [rel, meta] of Object.entries(manifest.records)) {
        const blob = await tx.get(this.blobKey(meta.h));
        if (!blob || hashOf(blob.value) !== meta.h) throw corrupt(`the saved value of ${JSON.stringify(rel.replace(SEP, '/'))} is missing or damaged`, { checkpointId: id });
        doc.records[rel] = { v: blob.value, ver: meta.ver, at: meta.at, by: meta.by, ...(meta.exp !== undefined ? { exp: meta.exp } : {}) };
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
      await this.manifestIn(tx, id).catch((error: unknown) => {
        if (error instanceof BlackboardError && error.code === 'CHECKPOINT_CORRUPT') return; // a corrupt one can still be deleted
        throw error;
      });
      await this.deleteIn(tx, id);
      return { deleted: true };
    }, { idempotencyKey: idempotencyStorageKey(this.who, 'checkpoint_delete', args.idempotencyKey) });
    return result;
  }

  /** The thread's state as a portable document (export --thread). */
  async exportThread(thread: string): Promise<ThreadDocument> {
    checkName('thread', thread);
    const { result } = await this.store.transact(async (tx) => {
      const { run, entries } = await this.collect(tx, thread);
      const rel = this.prefix().length;
      const records: Record<string, SavedRecord> = {};
      for (const [key, e] of entries) records[key.slice(rel)] = saved(e);
      return { format: FORMAT, kind: 'thread', thread, run, records: sortKeys(records) } as ThreadDocument;
    });
    return result;
  }

  /** Every record of the namespace (export without --thread); checkpoints and idempotency records are left out. */
  async exportNamespace(): Promise<NamespaceDocument> {
    const lo = this.prefix();
    const records: Record<string, SavedRecord> = {};
    let after: string | undefined;
    for (;;) {
      const { entries } = await this.store.list({ lo, hi: prefixEnd(lo), after, limit: 1000 });
      for (const [key, e] of entries) {
        const rel = key.slice(lo.length);
        if (!/^~cp(-[a-z]+)?:/.test(rel)) records[rel] = saved(e);
      }
      if (entries.length < 1000) break;
      after = entries[entries.length - 1][0];
    }
    return { format: FORMAT, kind: 'namespace', records: sortKeys(records) };
  }

  /** Loads a document (already validated by {@link loadDocument}) into the store, in one transaction. */
  async import(doc: ThreadDocument | NamespaceDocument): Promise<{ records: number }> {
    const { result } = await this.store.transact(async (tx) => {
      if (doc.kind === 'thread') return { records: await this.restoreIn(tx, doc) };
      for (const [rel, r] of Object.entries(doc.records)) await tx.putEntry(this.prefix() + rel, fromSaved(r));
      return { records: Object.keys(doc.records).length };
    });
    return result;
  }

  /** Replaces the thread's state by the document's: deletes what it has now, writes the saved records, moves its run. */
  private async restoreIn(tx: StoreTx, doc: ThreadDocument): Promise<number> {
    const { entries } = await this.collect(tx, doc.thread);
    const prefix = this.prefix();
    // Records the document does not have are deleted; the others are rewritten, keeping their version when they are
    // unchanged since the save and continuing above it otherwise (a version never goes back or repeats).
    for (const [key] of entries) if (!Object.hasOwn(doc.records, key.slice(prefix.length))) await tx.delete(key);
    for (const [rel, r] of Object.entries(doc.records)) await tx.putEntry(prefix + rel, fromSaved(r));
    const metaKey = this.session.threadKey(doc.thread);
    const meta = ((await tx.get(metaKey))?.value as ThreadInfo | undefined) ?? { root: doc.thread, level: 0, runs: 1 };
    await tx.set(metaKey, { ...meta, run: doc.run } as unknown as Json, { by: this.session.by });
    return Object.keys(doc.records).length;
  }

  /** The live records that make up a thread's state, keyed by storage key. */
  private async collect(tx: StoreTx, thread: string): Promise<{ run: string; entries: Array<[string, Entry]> }> {
    const who = this.who;
    const { plans, scratchpad, finalizer, budget, lifecycle, history } = this.owners;
    const run = ((await tx.get(this.session.threadKey(thread)))?.value as ThreadInfo | undefined)?.run ?? '';
    const threadScope = resolveScope('thread', { ...who, thread });
    const runScope = resolveScope('run', { ...who, thread, run });
    const out: Array<[string, Entry]> = [];
    const all = async (range: { lo: string; hi: string }): Promise<Array<[string, Entry]>> => {
      const rows: Array<[string, Entry]> = [];
      let after: string | undefined;
      for (;;) {
        const page = await tx.list({ ...range, after, limit: 1000 });
        rows.push(...page);
        if (page.length < 1000) return rows;
        after = page[page.length - 1][0];
      }
    };
    for (const range of [dataRange(who, threadScope, ''), dataRange(who, runScope, ''), budget.range(thread), history.range(thread)]) {
      out.push(...(await all(range)));
    }
    // Plans of the thread and of its run: the index entries and the plans they point at.
    for (const scope of [threadScope, runScope]) {
      for (const entry of await all(plans.indexRange(scope.id))) {
        out.push(entry);
        const planKey = plans.key(entry[0].slice(entry[0].lastIndexOf(SEP) + 1));
        const plan = await tx.get(planKey);
        if (plan) out.push([planKey, plan]);
      }
    }
    for (const key of [scratchpad.key(thread, run), finalizer.key(thread), lifecycle.key(thread), history.seqKey(thread)]) {
      const entry = await tx.get(key);
      if (entry) out.push([key, entry]);
    }
    return { run, entries: out };
  }

  private async idsIn(tx: StoreTx, thread: string): Promise<string[]> {
    const rows = await tx.list({ ...internalRange(this.who, 'cp-index', thread), limit: 10_000 });
    return rows.map(([key]) => key.slice(key.lastIndexOf(SEP) + 1));
  }

  private async manifestIn(tx: StoreTx, id: string): Promise<Manifest> {
    const entry = await tx.get(this.manifestKey(id));
    if (!entry) throw new BlackboardError('NOT_FOUND', `There is no checkpoint "${id}". Use checkpoint_list to see the checkpoints of a thread.`, { checkpointId: id });
    const m = entry.value as unknown as Manifest;
    if (typeof m !== 'object' || m === null || m.format !== FORMAT || typeof m.thread !== 'string' || typeof m.run !== 'string' || typeof m.records !== 'object' || m.records === null) {
      throw corrupt('its manifest is not a checkpoint document', { checkpointId: id });
    }
    for (const meta of Object.values(m.records)) {
      if (typeof meta?.h !== 'string' || !Number.isSafeInteger(meta.ver) || typeof meta.at !== 'number' || typeof meta.by !== 'string') {
        throw corrupt('its manifest has a malformed record', { checkpointId: id });
      }
    }
    return m;
  }

  private async deleteIn(tx: StoreTx, id: string): Promise<void> {
    const entry = await tx.get(this.manifestKey(id));
    if (!entry) throw new BlackboardError('NOT_FOUND', `There is no checkpoint "${id}".`, { checkpointId: id });
    const m = entry.value as unknown as Partial<Manifest>;
    for (const meta of Object.values(m.records ?? {})) if (typeof meta?.h === 'string') await this.dropRef(tx, meta.h);
    await tx.delete(this.manifestKey(id));
    if (typeof m.thread === 'string') await tx.delete(this.indexKey(m.thread, id));
  }

  private async addRef(tx: StoreTx, hash: string, value: Json): Promise<void> {
    const refs = ((await tx.get(this.refKey(hash)))?.value as number | undefined) ?? 0;
    if (refs === 0) await tx.putEntry(this.blobKey(hash), { value, version: 1, updatedAt: tx.now, updatedBy: 'checkpoint' });
    await tx.putEntry(this.refKey(hash), { value: refs + 1, version: 1, updatedAt: tx.now, updatedBy: 'checkpoint' });
  }

  private async dropRef(tx: StoreTx, hash: string): Promise<void> {
    const refs = ((await tx.get(this.refKey(hash)))?.value as number | undefined) ?? 0;
    if (refs <= 1) {
      await tx.delete(this.refKey(hash));
      await tx.delete(this.blobKey(hash));
    } else {
      await tx.putEntry(this.refKey(hash), { value: refs - 1, version: 1, updatedAt: tx.now, updatedBy: 'checkpoint' });
    }
  }
}

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

function checkId(id: string): string {
  if (typeof id !== 'string' || !CP_ID_RE.test(id)) {
    throw invalid('checkpointId is not a checkpoint id: use one returned by checkpoint_save or checkpoint_list.', { checkpointId: String(id).slice(0, 80) });
  }
  return id;
}

const saved = (e: Entry): SavedRecord => ({ v: e.value, ver: e.version, at: e.updatedAt, by: e.updatedBy, ...(e.expiresAt !== undefined ? { exp: e.expiresAt } : {}) });
const fromSaved = (r: SavedRecord): Omit<Entry, 'revision'> => ({ value: r.v, version: r.ver, updatedAt: r.at, updatedBy: r.by, ...(r.exp !== undefined ? { expiresAt: r.exp } : {}) });

function sortKeys<T>(records: Record<string, T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const key of Object.keys(records).sort()) Object.defineProperty(out, key, { value: records[key], enumerable: true, writable: true, configurable: true });
  return out;
}

/**
 * Parses and validates a document, migrating older formats. Format 1 (mcp-blackboard 0.0.x) spelled records out
 * as `{value, version, updatedAt: ISO string, updatedBy}` and had no `kind` (it was always one thread).
 * Throws CHECKPOINT_CORRUPT, never a half-read document.
 */
export function loadDocument(text: string): ThreadDocument | NamespaceDocument {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw corrupt('it is not JSON (truncated or damaged)');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw corrupt('it is not a JSON object');
  const doc = raw as Record<string, unknown>;
  if (doc.format === 1) return migrateV1(doc);
  if (doc.format !== FORMAT) throw corrupt(`its format ${JSON.stringify(doc.format)} is not one this version reads (1 or ${FORMAT})`);
  if (typeof doc.records !== 'object' || doc.records === null || Array.isArray(doc.records)) throw corrupt('it has no records');
  const records = doc.records as Record<string, unknown>;
  for (const [rel, r] of Object.entries(records)) checkSaved(rel, r);
  if (doc.kind === 'namespace') return { format: FORMAT, kind: 'namespace', records: records as Record<string, SavedRecord> };
  if (doc.kind !== 'thread' || typeof doc.thread !== 'string' || typeof doc.run !== 'string') throw corrupt('it names no thread and run');
  try {
    checkName('thread', doc.thread);
  } catch {
    throw corrupt('its thread id is not valid');
  }
  return { format: FORMAT, kind: 'thread', thread: doc.thread, run: doc.run, records: records as Record<string, SavedRecord> };
}

function checkSaved(rel: string, r: unknown): void {
  const x = r as Partial<SavedRecord> | null;
  const ok =
    typeof x === 'object' && x !== null && 'v' in x && Number.isSafeInteger(x.ver) && (x.ver as number) > 0 &&
    typeof x.at === 'number' && typeof x.by === 'string' && (x.exp === undefined || typeof x.exp === 'number') &&
    rel.includes(SEP) && !/[\u0000-\u001e\u007f-\u009f]/.test(rel);
  if (!ok) throw corrupt(`record ${JSON.stringify(rel.replace(SEP, '/'))} is malformed`);
}

function migrateV1(doc: Record<string, unknown>): ThreadDocument {
  if (typeof doc.thread !== 'string' || typeof doc.run !== 'string' || typeof doc.records !== 'object' || doc.records === null) {
    throw corrupt('it is a format-1 document without thread, run or records');
  }
  const records: Record<string, SavedRecord> = {};
  for (const [rel, r] of Object.entries(doc.records as Record<string, unknown>)) {
    const x = r as { value?: Json; version?: unknown; updatedAt?: unknown; updatedBy?: unknown } | null;
    const at = typeof x?.updatedAt === 'string' ? Date.parse(x.updatedAt) : NaN;
    if (!x || !('value' in x) || !Number.isSafeInteger(x.version) || Number.isNaN(at) || typeof x.updatedBy !== 'string') {
      throw corrupt(`format-1 record ${JSON.stringify(rel)} is malformed`);
    }
    records[rel] = { v: x.value as Json, ver: x.version as number, at, by: x.updatedBy };
    checkSaved(rel, records[rel]);
  }
  return { format: FORMAT, kind: 'thread', thread: doc.thread, run: doc.run, records };
}
