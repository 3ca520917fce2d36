// Where the board's records live in the store: the only module of the UI that knows the storage key layout.
import { internalKey, internalRange, type Identity } from '../context.js';
import { DEFAULT_NAMESPACE_TOKEN, SEP, prefixEnd, storageKey } from '../store/keys.js';

/**
 * The store keeps every record of a namespace under `d<SEP><namespace><SEP><scope><SEP><key>`. User scopes
 * (`global`, `thread:…`, `group:…`, …) start with a letter; each family's records (plans, lifecycle, budgets, …) live
 * in internal scopes `~<family>:<owner>`, which no tool argument can name and which sort after every user scope.
 * Everything below is built from the builders the services use (`internalKey`, `internalRange`), so that the
 * board reads exactly where the services write.
 */

/** A half-open key range `[lo, hi)`. */
export interface KeyRange {
  lo: string;
  hi: string;
}

/** How the unprefixed default namespace (no `--namespace`) is named in the board's URLs. */
export const DEFAULT_NAMESPACE = DEFAULT_NAMESPACE_TOKEN;

/** The families the board reads, by their internal scope names. */
export const FAMILY = {
  /** `~thread:meta` / thread id → ThreadInfo (delegation tree and current run) */
  threadMeta: { family: 'thread', owner: 'meta' },
  /** `~lifecycle:<thread>` / `state` → {state, run, reason?} */
  lifecycle: 'lifecycle',
  /** `~budget:<thread>` / budget name → {current, max?} */
  budget: 'budget',
  /** `~final:<thread>` / `answer` → {content, metadata?, run} */
  final: 'final',
  /** `~history:<thread>` / `e:<seq, 16 digits>` → {kind, content, data?} */
  history: 'history',
  /** `~history-seq:<thread>` / `seq` → the last sequence number */
  historySeq: 'history-seq',
  /** `~plan:id` / plan id → PlanRecord */
  plan: { family: 'plan', owner: 'id' },
} as const;

const HISTORY_SEQ_WIDTH = 16;

const DATA = 'd';
const identity = (namespace: string): Identity => ({
  namespace: namespace === DEFAULT_NAMESPACE ? undefined : namespace,
  thread: '-',
  run: '-',
  rootThread: '-',
  delegateLevel: 0,
});

/** The range holding every namespace's records, for discovering which namespaces exist. */
export const allNamespaces: KeyRange = { lo: `${DATA}${SEP}`, hi: prefixEnd(`${DATA}${SEP}`) };

/** Every record of one namespace. */
export function namespaceRange(namespace: string): KeyRange {
  const lo = storageKey(DATA, namespace, '');
  return { lo, hi: prefixEnd(lo) };
}

/** The user keys of a namespace, every scope (internal scopes excluded: they start with `~`). */
export function userKeysRange(namespace: string): KeyRange {
  const lo = storageKey(DATA, namespace, '');
  return { lo, hi: `${lo}~` };
}

/** Splits a storage key of the `d` kind; undefined for any other kind. */
export function parseKey(storageKeyText: string): { namespace: string; scope: string; key: string } | undefined {
  const parts = storageKeyText.split(SEP);
  if (parts.length < 4 || parts[0] !== DATA) return undefined;
  return { namespace: parts[1], scope: parts[2], key: parts.slice(3).join(SEP) };
}

/** Every record of one family, all owners (e.g. every thread's lifecycle). */
export function familyRange(namespace: string, family: string): KeyRange {
  const lo = storageKey(DATA, namespace, `~${family}:`);
  return { lo, hi: prefixEnd(lo) };
}

/** The owner part of an internal scope (`~budget:t1` → `t1`). */
export const ownerOf = (scope: string): string => scope.slice(scope.indexOf(':') + 1);

/** The records of one family and owner (e.g. one thread's budgets). */
export const ownerRange = (namespace: string, family: string, owner: string): KeyRange =>
  internalRange(identity(namespace), family, owner);

/** One record of a family. */
export const familyKey = (namespace: string, family: string, owner: string, key: string): string =>
  internalKey(identity(namespace), family, owner, key);

/** The history entry key of `seq` in a thread: reading after it starts at `seq + 1`. */
export const historyKey = (namespace: string, thread: string, seq: number): string =>
  familyKey(namespace, FAMILY.history, thread, `e:${String(seq).padStart(HISTORY_SEQ_WIDTH, '0')}`);

/** The sequence number of a history entry key. */
export function historySeq(key: string): number {
  return Number(key.slice(key.lastIndexOf('e:') + 2));
}

/** The part of the board a changed storage key belongs to, or undefined when the board does not show it. */
export type Section = 'scopes' | 'plans' | 'threads';
export const SECTIONS: readonly Section[] = ['scopes', 'plans', 'threads'];

export function sectionOf(scope: string): Section | undefined {
  if (!scope.startsWith('~')) return 'scopes';
  const family = scope.slice(1, scope.indexOf(':') < 0 ? undefined : scope.indexOf(':'));
  if (family === FAMILY.plan.family) return 'plans';
  if (
    family === FAMILY.threadMeta.family ||
    family === FAMILY.lifecycle ||
    family === FAMILY.budget ||
    family === FAMILY.final ||
    family === FAMILY.history ||
    family === FAMILY.historySeq
  ) {
    return 'threads';
  }
  return undefined;
}
