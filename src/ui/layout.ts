// Where the board's records live: the families it reads, by their storage names, over the keyspace module.
import {
  allNamespacesRange,
  familyKey,
  familyOwnersRange,
  familyRange,
  namespaceOf,
  namespaceRange,
  parseKey as parseStorageKey,
  userDataRange,
  type KeyRange,
  type ParsedKey,
} from '../keyspace.js';

export type { KeyRange, ParsedKey };

/**
 * The board names namespaces as its URLs do: a namespace's own name, or {@link DEFAULT_NAMESPACE} for the unprefixed
 * default one (no `--namespace`); it can never collide, since namespace names start with a letter.
 */
export const DEFAULT_NAMESPACE = '-';
const ns = (namespace: string): string | undefined => (namespace === DEFAULT_NAMESPACE ? undefined : namespace);

/** The families the board reads (the names the services keep them under), and what each record holds. */
export const FAMILY = {
  /** owner `meta`, key = thread id → ThreadInfo (delegation tree and current run) */
  thread: 'thread',
  /** owner = thread, key `state` → {state, run, reason?} */
  lifecycle: 'lifecycle',
  /** owner = thread, key = budget name → {current, max?} */
  budget: 'budget',
  /** owner = thread, key `answer` → {content, metadata?, run} */
  final: 'final',
  /** owner = thread, key `e:<seq, 16 digits>` → {kind, content, data?} */
  history: 'history',
  /** owner = thread, key `seq` → the last sequence number */
  historySeq: 'history-seq',
  /** owner `id`, key = plan id → the plan */
  plan: 'plan',
} as const;
export const THREAD_OWNER = 'meta';
export const PLAN_OWNER = 'id';
/** The families whose changes move the threads section. */
const THREAD_FAMILIES: readonly string[] = [FAMILY.thread, FAMILY.lifecycle, FAMILY.budget, FAMILY.final, FAMILY.history, FAMILY.historySeq];

/** The range in which the namespaces present are found, and the board name of a key's namespace. */
export const allNamespaces: KeyRange = allNamespacesRange;
export function boardNamespaceOf(storage: string): string | undefined {
  const found = namespaceOf(storage);
  return found === null ? undefined : (found ?? DEFAULT_NAMESPACE);
}
/** Every record of a namespace: the next namespace starts at its `hi`. */
export const recordsOf = (namespace: string): KeyRange => namespaceRange(ns(namespace));

/** The user keys of a namespace, all scopes. */
export const userKeys = (namespace: string): KeyRange => userDataRange(ns(namespace));
/** Every record of a family, all owners (e.g. every thread's lifecycle). */
export const allOwners = (namespace: string, family: string): KeyRange => familyOwnersRange(ns(namespace), family);
/** The records of one owner of a family (e.g. one thread's history). */
export const ofOwner = (namespace: string, family: string, owner: string): KeyRange => familyRange(ns(namespace), family, owner);

/** A storage key of the namespace, parsed: a user key in a scope, or a family's record. */
export const parseKey = (namespace: string, storage: string): ParsedKey | undefined => parseStorageKey(ns(namespace), storage);

/**
 * The history entry key of `seq` in a thread, to read the entries after it. The history service keeps entries under
 * `e:` and the sequence number padded to 16 digits, so that key order is sequence order.
 */
export const historyKey = (namespace: string, thread: string, seq: number): string =>
  familyKey(ns(namespace), FAMILY.history, thread, `e:${String(seq).padStart(16, '0')}`);
export const historySeq = (key: string): number => Number(key.slice(key.lastIndexOf('e:') + 2));

/** The parts of the board a browser re-reads when the store changes. */
export type Section = 'scopes' | 'plans' | 'threads';
export const SECTIONS: readonly Section[] = ['scopes', 'plans', 'threads'];

/** The key ranges whose changes move each section of a namespace's board. */
export function sectionRanges(namespace: string): Array<{ section: Section; range: KeyRange }> {
  return [
    { section: 'scopes', range: userKeys(namespace) },
    { section: 'plans', range: ofOwner(namespace, FAMILY.plan, PLAN_OWNER) },
    ...THREAD_FAMILIES.map((family) => ({ section: 'threads' as const, range: allOwners(namespace, family) })),
  ];
}
