// Where the board's records live: the families it reads, by their storage names, over the keyspace module.
import {
  FAMILY,
  PLAN_OWNER,
  THREAD_OWNER,
  allNamespacesRange,
  historySeq,
  keysOf,
  familyOwnersRange,
  familyRange,
  namespaceOf,
  namespaceRange,
  parseKey as parseStorageKey,
  userDataRange,
  type KeyRange,
  type Keys,
  type ParsedKey,
} from '../keyspace.js';
import { familiesOfSection } from '../families/registry.js';

export type { KeyRange, ParsedKey };

/**
 * The board names namespaces as its URLs do: a namespace's own name, or {@link DEFAULT_NAMESPACE} for the unprefixed
 * default one (no `--namespace`); it can never collide, since namespace names start with a letter.
 */
export const DEFAULT_NAMESPACE = '-';
const ns = (namespace: string): string | undefined => (namespace === DEFAULT_NAMESPACE ? undefined : namespace);

export { FAMILY, PLAN_OWNER, THREAD_OWNER };
/** The families whose changes move the threads section. */
const THREAD_FAMILIES: readonly string[] = familiesOfSection('threads');

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

/** The storage keys of a namespace's records (the team section reads the roster and messages through them). */
export const teamKeys = (namespace: string): Keys => keysOf(ns(namespace));

/** The history entry key of `seq` in a thread, to read the entries after it; and an entry key's sequence number. */
export const historyKey = (namespace: string, thread: string, seq: number): string => keysOf(ns(namespace)).historyEvent(thread, seq);
export { historySeq };

/** The parts of the board a browser re-reads when the store changes. */
export type Section = 'scopes' | 'plans' | 'threads';
export const SECTIONS: readonly Section[] = ['scopes', 'plans', 'threads'];

/** The key ranges whose changes move each section of a namespace's board. */
export function sectionRanges(namespace: string): Array<{ section: Section; range: KeyRange }> {
  return [
    { section: 'scopes', range: userKeys(namespace) },
    { section: 'plans', range: ofOwner(namespace, FAMILY.plan, PLAN_OWNER) },
    // a thread's activity follows its claims and its calls (signs of life); the plans follow only the signs of life of
    // claim holders, which LiveBoard tells apart
    { section: 'threads', range: ofOwner(namespace, FAMILY.plan, PLAN_OWNER) },
    ...THREAD_FAMILIES.map((family) => ({ section: 'threads' as const, range: allOwners(namespace, family) })),
  ];
}

/** The ranges whose changes move what a board shows, less callers' signs of life (every call renews its own). */
export function boardWaitRanges(namespace: string): KeyRange[] {
  const presence = allOwners(namespace, FAMILY.presence);
  const ranges = sectionRanges(namespace)
    .map(({ range }) => range)
    .filter((range) => range.lo !== presence.lo);
  return ranges.filter((range, i) => ranges.findIndex((r) => r.lo === range.lo) === i);
}
