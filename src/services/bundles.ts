// The bundle service: a thread's or a namespace's state as a portable document (export), and back (import).
import { BlackboardError } from '../errors.js';
import { checkName, type Identity } from '../context.js';
import { lastPart, showRelative } from '../keyspace.js';
import { sameJson } from '../store/json-text.js';
import type { StoreTx, VersionedStore } from '../store/versioned-store.js';
import {
  FORMAT,
  fromSaved,
  saved,
  sortKeys,
  type NamespaceDocument,
  type SavedRecord,
  type ThreadDocument,
} from './checkpoint-document.js';
import { counterStays, restoreState } from './checkpoint-restore.js';
import { collectState, stateOf } from './checkpoint-state.js';
import { importIn, isIndexRecord } from './presence-index.js';
import type { Session } from './session.js';

/** What an import did: records written, and of those already there how many it replaced and removed. */
export interface ImportResult {
  records: number;
  replaced: number;
  removed: number;
}

/** How many times a namespace export reads the namespace while writes keep changing it. */
export const EXPORT_TRIES = 3;
/** Records named in a refusal, at most. */
const EXAMPLES = 3;

/**
 * Export and import. An import loads a document into the store in one transaction. It never silently replaces what
 * is there: a record the store holds with another value, or (for a thread) a record of the thread the document does
 * not have, makes it refuse with `VERSION_CONFLICT`, changing nothing, unless `replace` is given. Loading the same
 * document again changes nothing (each record keeps its version). A sequence counter (history, messages) the store
 * has further along than the document stays as it is: the numbers it gave are never given again.
 */
export class BundleService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    /** how long the plans of a run a thread import leaves are kept */
    private readonly planTtlMs: number,
  ) {}

  private get who(): Identity {
    return this.session.identity;
  }
  private get keys() {
    return this.session.keys;
  }

  /** The thread's state as a portable document (export --thread); NOT_FOUND when the store has no record of it. */
  async exportThread(thread: string): Promise<ThreadDocument> {
    checkName('thread', thread);
    const { result } = await this.store.transact(async (tx) => {
      const { run, entries } = await collectState(tx, this.keys, this.who, thread);
      if (entries.length === 0) {
        throw new BlackboardError(
          'NOT_FOUND',
          `Thread "${thread}" has no state in this store${this.namespaceWords()}: nothing to export.`,
          {
            thread,
          },
        );
      }
      const records: Record<string, SavedRecord> = {};
      for (const [key, e] of entries) records[this.keys.relative(key)] = saved(e);
      return { format: FORMAT, kind: 'thread', thread, run, records: sortKeys(records) } satisfies ThreadDocument;
    });
    return result;
  }

  /**
   * Every record of the namespace (export without --thread); checkpoints and idempotency records are left out. It is
   * read a page at a time, then again (up to {@link EXPORT_TRIES} reads) while the change log shows a write to the
   * namespace meanwhile; `consistent` says whether the last read saw none, so that the document is the namespace at one
   * moment.
   */
  async exportNamespace(): Promise<{ doc: NamespaceDocument; consistent: boolean }> {
    for (let attempt = 1; ; attempt++) {
      const from = await this.store.revision();
      const records = await this.readNamespace();
      const { changes, compacted } = await this.store.changes({ after: from, ...this.keys.all(), limit: 1 });
      const consistent = changes.length === 0 && compacted <= from;
      if (consistent || attempt === EXPORT_TRIES)
        return { doc: { format: FORMAT, kind: 'namespace', records: sortKeys(records) }, consistent };
    }
  }

  private async readNamespace(): Promise<Record<string, SavedRecord>> {
    const records: Record<string, SavedRecord> = {};
    let after: string | undefined;
    for (;;) {
      const { entries } = await this.store.list({ ...this.keys.all(), after, limit: 1000 });
      for (const [key, e] of entries) {
        const rel = this.keys.relative(key);
        // nor the index of signs of life: the store's own, made again from the signs of life on import
        if (!this.keys.isCheckpointRecord(rel) && !isIndexRecord(this.keys, key)) records[rel] = saved(e);
      }
      if (entries.length < 1000) return records;
      after = entries[entries.length - 1][0];
    }
  }

  /** Loads a document (already validated by `loadDocument`) into the store, in one transaction. */
  async import(doc: ThreadDocument | NamespaceDocument, options: { replace?: boolean } = {}): Promise<ImportResult> {
    if (doc.kind === 'thread') this.checkThreadRecords(doc);
    const { result } = await this.store.transact(async (tx) => {
      checkValues(tx, doc);
      const { replaced, removed } = await this.differences(tx, doc);
      if (!options.replace && replaced.length + removed.length > 0) throw this.wouldReplace(doc, replaced, removed);
      const records = Object.keys(doc.records).length;
      if (doc.kind === 'thread')
        await restoreState(tx, this.keys, this.who, this.session.by, doc, { keepWork: false, planTtlMs: this.planTtlMs });
      else
        for (const [rel, r] of Object.entries(doc.records)) {
          const key = this.keys.absolute(rel);
          const before = (await tx.get(key))?.value;
          if (!(await importIn(tx, this.keys, key, before, fromSaved(r), this.session.by))) continue;
          if (!counterStays(rel, before, r.v)) await tx.putEntry(key, fromSaved(r));
        }
      return { records, replaced: replaced.length, removed: removed.length };
    });
    return result;
  }

  /**
   * A thread bundle holds the thread's state only (its scopes at the bundle's run, its families' records, and the plans
   * its scopes index): a record anywhere else is refused (CHECKPOINT_CORRUPT), so a thread import cannot overwrite the
   * rest of the namespace.
   */
  private checkThreadRecords(doc: ThreadDocument): void {
    const state = stateOf(this.keys, this.who, doc.thread, doc.run);
    const ranges = [...state.ranges, ...state.planIndexes];
    const singles = new Set(state.keys);
    const indexed = new Set<string>();
    for (const rel of Object.keys(doc.records)) {
      const key = this.keys.absolute(rel);
      if (state.planIndexes.some((r) => key >= r.lo && key < r.hi)) indexed.add(this.keys.plan(lastPart(key)));
    }
    for (const rel of Object.keys(doc.records)) {
      const key = this.keys.absolute(rel);
      if (singles.has(key) || indexed.has(key) || ranges.some((r) => key >= r.lo && key < r.hi)) continue;
      throw new BlackboardError(
        'CHECKPOINT_CORRUPT',
        `The bundle cannot be used: record ${JSON.stringify(showRelative(rel))} is not part of thread "${doc.thread}"'s state, and a thread bundle holds only that. Nothing was changed.`,
        { record: showRelative(rel) },
      );
    }
  }

  /** The live records (relative keys) the document would give another value, and those of its thread it would remove. */
  private async differences(tx: StoreTx, doc: ThreadDocument | NamespaceDocument): Promise<{ replaced: string[]; removed: string[] }> {
    const replaced: string[] = [];
    const removed: string[] = [];
    if (doc.kind === 'thread') {
      const { entries } = await collectState(tx, this.keys, this.who, doc.thread);
      for (const [key, e] of entries) {
        const rel = this.keys.relative(key);
        const r = doc.records[rel];
        if (counterStays(rel, e.value, r?.v)) continue;
        if (r === undefined) removed.push(rel);
        else if (!sameJson(e.value, r.v)) replaced.push(rel);
      }
      return { replaced, removed };
    }
    for (const [rel, r] of Object.entries(doc.records)) {
      if (isIndexRecord(this.keys, this.keys.absolute(rel))) continue; // not imported
      const e = await tx.get(this.keys.absolute(rel));
      if (e !== undefined && !sameJson(e.value, r.v) && !counterStays(rel, e.value, r.v)) replaced.push(rel);
    }
    return { replaced, removed };
  }

  private wouldReplace(doc: ThreadDocument | NamespaceDocument, replaced: string[], removed: string[]): BlackboardError {
    const what = doc.kind === 'thread' ? `thread "${doc.thread}"` : `this namespace`;
    const parts = [
      ...(replaced.length > 0 ? [`replace ${replaced.length} record(s) that hold other values`] : []),
      ...(removed.length > 0 ? [`remove ${removed.length} record(s) the bundle does not have`] : []),
    ];
    const examples = [...replaced, ...removed].slice(0, EXAMPLES).map(showRelative);
    return new BlackboardError(
      'VERSION_CONFLICT',
      `The store already holds state of ${what}${this.namespaceWords()}: importing would ${parts.join(' and ')} (${examples.map((e) => JSON.stringify(e)).join(', ')}). ` +
        'Nothing was changed. Import into an empty store or namespace, or pass --replace (replace: true) to replace it.',
      { replaced: replaced.length, removed: removed.length, examples },
    );
  }

  private namespaceWords(): string {
    return this.who.namespace !== undefined ? ` (namespace ${this.who.namespace})` : '';
  }
}

/**
 * Every value of a bundle within this store's bounds (`--max-value-bytes`, nesting), as a tool's write would be: a
 * store written by servers with a larger limit cannot hand the servers reading this one values they would refuse.
 */
function checkValues(tx: StoreTx, doc: ThreadDocument | NamespaceDocument): void {
  for (const [rel, record] of Object.entries(doc.records)) {
    try {
      tx.checkValue(fromSaved(record).value);
    } catch (error) {
      if (!(error instanceof BlackboardError)) throw error;
      const { bytes, maxValueBytes } = error.details as { bytes?: number; maxValueBytes?: number };
      const why =
        error.code === 'VALUE_TOO_LARGE'
          ? `holds a value of ${bytes} bytes, over this store's limit of ${maxValueBytes} (--max-value-bytes): nothing was changed. If the servers that use this store accept larger values, import with their --max-value-bytes.`
          : `cannot be imported: ${error.message} Nothing was changed.`;
      throw new BlackboardError(error.code, `The bundle's record ${JSON.stringify(showRelative(rel))} ${why}`, {
        record: showRelative(rel),
        ...error.details,
      });
    }
  }
}
