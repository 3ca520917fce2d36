// The storage key layout: the one module that builds and parses the keys under which services keep their records.
import { CHECKPOINT_RECORDS, FAMILIES, STORED, declarations } from './families/registry.js';
import { DEFAULT_NAMESPACE_TOKEN, SEP, prefixEnd, storageKey } from './store/keys.js';
import type { KeyRange } from './store/types.js';

export type { KeyRange } from './store/types.js';

/**
 * Every storage key is `<kind>␟<namespace>␟<scope>␟<key>` (`␟` = U+001F, which no name or user key may contain, so no
 * namespace or scope can ever match another's range):
 * - kind `d`, data: a user key in a scope (`global`, `thread:ID`, `run:THREAD:RUN`, `group:NAME`, …), or a family's
 *   record in an internal scope `~family:owner` that no tool argument can name (plans, budgets, history, …);
 * - kind `i`, idempotency records: `i␟<namespace>␟<thread>␟<idempotencyKey>`;
 * - kind `m`, the store's own bookkeeping (owned by `store/keys.ts`).
 *
 * What a data-kind storage key holds: a user key in a scope, or a family's record.
 */
export type ParsedKey = { kind: 'data'; scope: string; key: string } | { kind: 'family'; family: string; owner: string; key: string };

const token = (namespace: string | undefined): string => namespace ?? DEFAULT_NAMESPACE_TOKEN;
const rangeOf = (lo: string): KeyRange => ({ lo, hi: prefixEnd(lo) });
const familyScope = (family: string, owner: string): string => `~${family}:${owner}`;

/** The storage key of a user key in a scope (`scopeId` as resolved from the caller's identity). */
export const dataKey = (namespace: string | undefined, scopeId: string, key: string): string =>
  storageKey('d', token(namespace), scopeId, key);

/** The keys of a scope that start with `prefix`. */
export const dataRange = (namespace: string | undefined, scopeId: string, prefix = ''): KeyRange =>
  rangeOf(dataKey(namespace, scopeId, prefix));

/** A family's record: `family` names the service (`plan`, `budget`, …), `owner` whose it is (a thread, `id`, …). */
export const familyKey = (namespace: string | undefined, family: string, owner: string, key: string): string =>
  storageKey('d', token(namespace), familyScope(family, owner), key);

/** Every record of a family's owner. */
export const familyRange = (namespace: string | undefined, family: string, owner: string): KeyRange =>
  rangeOf(familyKey(namespace, family, owner, ''));

/** Every data-kind record of a namespace: its scopes and its families. */
export const namespaceRange = (namespace: string | undefined): KeyRange => rangeOf(storageKey('d', token(namespace), ''));

/**
 * Where the first result of an idempotent call is kept: per namespace and thread, whatever the tool, so a key reused
 * for another tool's call is refused like one reused with other arguments.
 */
export const idempotencyKey = (namespace: string | undefined, thread: string, key: string): string =>
  storageKey('i', token(namespace), thread, key);

/** The last part of a storage key: the user key, plan id, budget name, … */
export const lastPart = (storage: string): string => storage.slice(storage.lastIndexOf(SEP) + 1);

/**
 * A key relative to its namespace (`<scope>␟<key>`), as checkpoints and bundles keep them, so a document restores
 * into whichever namespace loads it; {@link absoluteKey} is the inverse.
 */
export const relativeKey = (namespace: string | undefined, storage: string): string => storage.slice(namespaceRange(namespace).lo.length);
export const absoluteKey = (namespace: string | undefined, relative: string): string => namespaceRange(namespace).lo + relative;

/** Whether a relative key is well formed: a scope and a key, no control characters but the one separator. */
export const isRelativeKey = (relative: string): boolean => relative.includes(SEP) && !/[\u0000-\u001e\u007f-\u009f]/.test(relative);

/** The scope of a relative key: a scope id (`global`, `thread:T`, …) or a family's (`~family:owner`). */
export const relativeScope = (relative: string): string => relative.slice(0, relative.indexOf(SEP));

/** The user key of a relative key in a scope; undefined for a family's record (its scope starts with `~`). */
export const relativeUserKey = (relative: string): string | undefined =>
  relative.startsWith('~') ? undefined : relative.slice(relative.indexOf(SEP) + 1);

/** A relative key for people (`scope/key`), in messages. */
export const showRelative = (relative: string): string => relative.replace(SEP, '/');

/** Whether a relative key belongs to one of these families (checkpoints' own records, left out of exports). */
export const isFamilyRelative = (relative: string, families: readonly string[]): boolean =>
  families.some((family) => relative.startsWith(`~${family}:`));

/** Parses a data-kind key of `namespace`; `undefined` for anything else. */
export function parseKey(namespace: string | undefined, storage: string): ParsedKey | undefined {
  const { lo } = namespaceRange(namespace);
  if (!storage.startsWith(lo)) return undefined;
  const rest = storage.slice(lo.length);
  const sep = rest.indexOf(SEP);
  if (sep < 0) return undefined;
  const scope = rest.slice(0, sep);
  const key = rest.slice(sep + 1);
  if (!scope.startsWith('~')) return { kind: 'data', scope, key };
  const colon = scope.indexOf(':');
  if (colon < 0) return undefined;
  return { kind: 'family', family: scope.slice(1, colon), owner: scope.slice(colon + 1), key };
}

// For the board, which reads a whole namespace (or finds which namespaces exist) rather than one owner's records.

/** Every data-kind record of every namespace: the range in which the namespaces present are found. */
export const allNamespacesRange: KeyRange = rangeOf(`d${SEP}`);

/** The namespace a data-kind key belongs to (`undefined` = the default namespace), or `null` for any other key. */
export function namespaceOf(storage: string): string | undefined | null {
  const parts = storage.split(SEP);
  if (parts.length < 4 || parts[0] !== 'd') return null;
  return parts[1] === DEFAULT_NAMESPACE_TOKEN ? undefined : parts[1];
}

/** Every user key of a namespace, all scopes (family scopes start with `~`, so they sort after every user scope). */
export const userDataRange = (namespace: string | undefined): KeyRange => {
  const { lo } = namespaceRange(namespace);
  return { lo, hi: `${lo}~` };
};

/** Every record of a family, all owners (e.g. every thread's budgets). */
export const familyOwnersRange = (namespace: string | undefined, family: string): KeyRange =>
  rangeOf(storageKey('d', token(namespace), `~${family}:`));

/**
 * The families' names as they are stored (declared in `families/registry.ts`): part of every family key, so renaming
 * one orphans its existing records.
 * Plans are kept by id under owner {@link PLAN_OWNER}; what is known of threads under owner {@link THREAD_OWNER}.
 */
export const FAMILY = STORED;
export const PLAN_OWNER = 'id';
export const THREAD_OWNER = 'meta';

/** The sequence number of a history event's key (`e:` and the number, zero-padded so key order is number order). */
export const historySeq = (storage: string): number => Number(lastPart(storage).slice(2));
export const SEQ_WIDTH = 16;
/** The mailbox part of an agent's own mail and position, whichever thread it reads in (no thread id starts with "~"). */
export const AGENT_MAILBOX = '~';

/** Every family's storage keys for one namespace (`keysOf(namespace)`): nothing else composes or splits storage keys. */
export class Keys {
  constructor(readonly namespace: string | undefined) {}

  /** A user key in a scope, and a scope's keys starting with `prefix`. */
  data(scopeId: string, key: string): string {
    return dataKey(this.namespace, scopeId, key);
  }
  dataRange(scopeId: string, prefix = ''): KeyRange {
    return dataRange(this.namespace, scopeId, prefix);
  }
  /** The user key of a storage key of `scopeId` (as listed from {@link dataRange}). */
  userKey(scopeId: string, storage: string): string {
    return storage.slice(this.data(scopeId, '').length);
  }

  /** A plan, by id (so it is found, and watched, without its scope). */
  plan(planId: string): string {
    return familyKey(this.namespace, FAMILY.plan, PLAN_OWNER, planId);
  }
  /** Every plan of the namespace. */
  planRange(): KeyRange {
    return familyRange(this.namespace, FAMILY.plan, PLAN_OWNER);
  }
  /** The plan a storage key is of: a plan's record or an index entry listing it (`undefined` for any other key). */
  planOf(storage: string): string | undefined {
    const parsed = parseKey(this.namespace, storage);
    return parsed?.kind === 'family' && (parsed.family === FAMILY.plan || parsed.family === FAMILY.planIndex) ? parsed.key : undefined;
  }
  /** The index entry that lists a plan in the scope it was made in, and a scope's index. */
  planIndex(scopeId: string, planId: string): string {
    return familyKey(this.namespace, FAMILY.planIndex, scopeId, planId);
  }
  planIndexRange(scopeId: string): KeyRange {
    return familyRange(this.namespace, FAMILY.planIndex, scopeId);
  }

  /** A thread's budget by name, and all of a thread's budgets. */
  budget(thread: string, name: string): string {
    return familyKey(this.namespace, FAMILY.budget, thread, name);
  }
  budgetRange(thread: string): KeyRange {
    return familyRange(this.namespace, FAMILY.budget, thread);
  }

  /** A thread's history event by sequence number (zero-padded so key order is number order), and all of them. */
  historyEvent(thread: string, seq: number): string {
    return familyKey(this.namespace, FAMILY.history, thread, `e:${String(seq).padStart(SEQ_WIDTH, '0')}`);
  }
  historyRange(thread: string): KeyRange {
    return familyRange(this.namespace, FAMILY.history, thread);
  }
  /** The sequence number of a history event's key. */
  historySeq(storage: string): number {
    return historySeq(storage);
  }
  /** A thread's last history sequence number (kept apart from the events, so pruning never reuses numbers). */
  historyCounter(thread: string): string {
    return familyKey(this.namespace, FAMILY.historySeq, thread, FAMILIES.historySeq.key);
  }

  /** A run's scratchpad, a thread's final answer, its lifecycle state, and what is known of the thread. */
  scratchpad(thread: string, run: string): string {
    return familyKey(this.namespace, FAMILY.scratchpad, thread, run);
  }
  finalAnswer(thread: string): string {
    return familyKey(this.namespace, FAMILY.final, thread, FAMILIES.final.key);
  }
  lifecycle(thread: string): string {
    return familyKey(this.namespace, FAMILY.lifecycle, thread, FAMILIES.lifecycle.key);
  }
  threadInfo(thread: string): string {
    return familyKey(this.namespace, FAMILY.thread, THREAD_OWNER, thread);
  }

  /** A caller's sign of life, one per (agent, thread) (`-` for no agent name, which no name can be); all, or a thread's. */
  presence(agent: string | undefined, thread: string): string {
    return familyKey(this.namespace, FAMILY.presence, thread, agent ?? '-');
  }
  presenceRange(thread?: string): KeyRange {
    return thread === undefined ? familyOwnersRange(this.namespace, FAMILY.presence) : familyRange(this.namespace, FAMILY.presence, thread);
  }
  /** A sign of life's copy by agent name (key: thread) or type (key: `agent:thread`, `-`: none), all of one's, and since when. */
  presenceBy(by: 'agent' | 'type', owner: string, key = ''): string {
    return familyKey(this.namespace, by === 'agent' ? FAMILY.presenceByAgent : FAMILY.presenceByType, owner, key);
  }
  presenceByRange(by: 'agent' | 'type', owner: string): KeyRange {
    return rangeOf(this.presenceBy(by, owner));
  }
  presenceIndexed(): string {
    return familyKey(this.namespace, FAMILY.presenceIndexed, 'all', FAMILIES.presenceIndexed.key);
  }

  /** Messages: the namespace's log by sequence number (and its counter), each recipient's mailbox entries, the
   * entries kept for a recipient not yet on the roster, and each recipient's acknowledged position. */
  message(seq: number): string {
    return familyKey(this.namespace, FAMILY.message, 'all', String(seq).padStart(SEQ_WIDTH, '0'));
  }
  messageRange(): KeyRange {
    return familyRange(this.namespace, FAMILY.message, 'all');
  }
  messageCounter(): string {
    return familyKey(this.namespace, FAMILY.messageSeq, 'all', FAMILIES.messageSeq.key);
  }
  /**
   * A mailbox entry: of a thread of an agent (or of no agent name), or with `thread` {@link AGENT_MAILBOX} the
   * agent's own mailbox, whatever thread it reads in.
   */
  mailbox(agent: string | undefined, thread: string, seq: number): string {
    return familyKey(this.namespace, FAMILY.mailbox, agent ?? '-', `${thread}:${String(seq).padStart(SEQ_WIDTH, '0')}`);
  }
  /**
   * One mailbox (a thread's of an agent, or the agent's own), or every mailbox of an agent name. A thread's range also
   * holds the keys of threads whose id starts with its id and ":" (see {@link isMailboxOf}).
   */
  mailboxRange(agent: string | undefined, thread?: string): KeyRange {
    const range = familyRange(this.namespace, FAMILY.mailbox, agent ?? '-');
    return thread === undefined ? range : { lo: `${range.lo}${thread}:`, hi: prefixEnd(`${range.lo}${thread}:`) };
  }
  /** Whether a key of {@link mailboxRange}(agent, thread) is that thread's own (not a thread `<thread>:…`'s). */
  isMailboxOf(storage: string, thread: string): boolean {
    return lastPart(storage).length === thread.length + 1 + SEQ_WIDTH;
  }
  mailboxWait(awaited: string, seq: number): string {
    return familyKey(this.namespace, FAMILY.mailboxWait, awaited, String(seq).padStart(SEQ_WIDTH, '0'));
  }
  mailboxWaitRange(awaited: string): KeyRange {
    return familyRange(this.namespace, FAMILY.mailboxWait, awaited);
  }
  inboxPosition(agent: string | undefined, thread: string): string {
    return familyKey(this.namespace, FAMILY.inboxPosition, agent ?? '-', thread);
  }
  /** Every mailbox entry of the namespace (what the inbox resource follows), and the agent a mailbox key is for. */
  mailboxesRange(): KeyRange {
    return familyOwnersRange(this.namespace, FAMILY.mailbox);
  }
  mailboxAgent(storage: string): string | undefined {
    const parsed = parseKey(this.namespace, storage);
    return parsed?.kind === 'family' && parsed.family === FAMILY.mailbox ? parsed.owner : undefined;
  }
  /** Every entry kept for a recipient not yet on the roster, and the agent name one kept for a name is for. */
  mailboxWaitsRange(): KeyRange {
    return familyOwnersRange(this.namespace, FAMILY.mailboxWait);
  }
  mailboxWaitAgent(storage: string): string | undefined {
    const parsed = parseKey(this.namespace, storage);
    return parsed?.kind === 'family' && parsed.family === FAMILY.mailboxWait && parsed.owner.startsWith('a.')
      ? parsed.owner.slice(2)
      : undefined;
  }
  /** The sequence number of a message log, mailbox or awaited-recipient key. */
  messageSeq(storage: string): number {
    const last = lastPart(storage);
    return Number(last.slice(last.lastIndexOf(':') + 1));
  }

  /** Checkpoints: manifests by id, each thread's index of them, and the content-addressed values with their counts. */
  checkpoint(id: string): string {
    return familyKey(this.namespace, FAMILY.checkpoint, 'all', id);
  }
  checkpointIndex(thread: string, id: string): string {
    return familyKey(this.namespace, FAMILY.checkpointIndex, thread, id);
  }
  checkpointIndexRange(thread: string): KeyRange {
    return familyRange(this.namespace, FAMILY.checkpointIndex, thread);
  }
  /** A thread's checkpoint count and newest checkpoint id (what a save needs without listing them all). */
  checkpointHead(thread: string): string {
    return familyKey(this.namespace, FAMILY.checkpointHead, THREAD_OWNER, thread);
  }
  blob(hash: string): string {
    return familyKey(this.namespace, FAMILY.blob, 'v', hash);
  }
  blobRefs(hash: string): string {
    return familyKey(this.namespace, FAMILY.blobRefs, 'v', hash);
  }

  /** Where the first result of an idempotent call is kept. */
  idempotency(thread: string, key: string): string {
    return idempotencyKey(this.namespace, thread, key);
  }

  /** The namespace's data-kind records, and keys relative to the namespace (what documents keep). */
  all(): KeyRange {
    return namespaceRange(this.namespace);
  }
  relative(storage: string): string {
    return relativeKey(this.namespace, storage);
  }
  absolute(relative: string): string {
    return absoluteKey(this.namespace, relative);
  }
  /** Checkpoints' own records: left out of namespace exports. */
  isCheckpointRecord(relative: string): boolean {
    return isFamilyRelative(relative, CHECKPOINT_RECORDS);
  }

  /**
   * A thread's state as a checkpoint keeps it: the ranges to read whole (its thread and run scopes, and the families
   * the registry puts in a checkpoint by owner: budgets, history), the plan indexes of those scopes (each entry's plan
   * comes along), and single records (the run's scratchpad, the final answer, lifecycle, the history counter).
   */
  threadState(
    thread: string,
    threadScopeId: string,
    runScopeId: string,
    run: string,
  ): { ranges: KeyRange[]; planIndexes: KeyRange[]; keys: string[] } {
    const ranges = [this.dataRange(threadScopeId), this.dataRange(runScopeId)];
    const keys: string[] = [];
    for (const f of declarations()) {
      if (f.checkpoint === 'owner') ranges.push(familyRange(this.namespace, f.stored, thread));
      else if (f.checkpoint === 'run') keys.push(familyKey(this.namespace, f.stored, thread, run));
      else if (f.checkpoint === 'record') keys.push(familyKey(this.namespace, f.stored, thread, f.key));
    }
    return { ranges, planIndexes: [this.planIndexRange(threadScopeId), this.planIndexRange(runScopeId)], keys };
  }
}

/** The keys of a namespace (`undefined` = the unprefixed default namespace). */
export const keysOf = (namespace: string | undefined): Keys => new Keys(namespace);
