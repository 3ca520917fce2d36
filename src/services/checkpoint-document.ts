// The portable, versioned JSON of a thread's (or a namespace's) state: what checkpoints, export and import share.
import { BlackboardError } from '../errors.js';
import { MAX_KEY_CHARS, checkKey, checkName, isScopeId } from '../context.js';
import { familyRecordProblem } from '../families/schemas.js';
import { FAMILY, SEQ_WIDTH, isRelativeKey, keysOf, relativeScope, relativeUserKey, showRelative } from '../keyspace.js';
import { nesting } from '../store/json-text.js';
import type { Json } from '../store/types.js';
import type { Entry } from '../store/versioned-store.js';

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

/** CHECKPOINT_CORRUPT: a document or checkpoint that cannot be used; nothing was changed. */
export const corrupt = (why: string, details?: Record<string, unknown>): BlackboardError =>
  new BlackboardError(
    'CHECKPOINT_CORRUPT',
    `The checkpoint cannot be used: ${why}. Nothing was changed. Restore another checkpoint or delete this one. {tool:checkpoint_list} shows the others.`,
    details,
  );

export const saved = (e: Entry): SavedRecord => ({
  v: e.value,
  ver: e.version,
  at: e.updatedAt,
  by: e.updatedBy,
  ...(e.expiresAt !== undefined ? { exp: e.expiresAt } : {}),
});

export const fromSaved = (r: SavedRecord): Omit<Entry, 'revision'> => ({
  value: r.v,
  version: r.ver,
  updatedAt: r.at,
  updatedBy: r.by,
  ...(r.exp !== undefined ? { expiresAt: r.exp } : {}),
});

/** The same records with their keys in order, so documents compare and diff well. */
export function sortKeys<T>(records: Record<string, T>): Record<string, T> {
  const out: Record<string, T> = {};
  for (const key of Object.keys(records).sort()) {
    Object.defineProperty(out, key, { value: records[key], enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** The deepest nesting a saved value may have: well past what a tool accepts (64), short of a stack overflow. */
const MAX_SAVED_DEPTH = 1000;
/** The latest and earliest time a Date can hold, in epoch ms. */
const MAX_TIME = 8.64e15;

/** Why a document cannot be used; `loadDocument` words it for a checkpoint or a bundle. */
class Unusable extends Error {}

/**
 * Parses and validates a document, migrating older formats. Format 1 (mcp-blackboard 0.0.x) spelled records out
 * as `{value, version, updatedAt: ISO string, updatedBy}` and had no `kind` (it was always one thread).
 * Throws CHECKPOINT_CORRUPT (worded for a checkpoint, or for a bundle the `import` command or library loads), never
 * a half-read document.
 */
export function loadDocument(text: string, what: 'checkpoint' | 'bundle' = 'checkpoint'): ThreadDocument | NamespaceDocument {
  try {
    const doc = parseDocument(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text); // a byte-order mark is not content
    if (what === 'bundle') for (const [rel, r] of Object.entries(doc.records)) checkReachable(rel, r.v);
    return doc;
  } catch (error) {
    if (!(error instanceof Unusable)) throw error;
    if (what === 'checkpoint') throw corrupt(error.message);
    throw new BlackboardError('CHECKPOINT_CORRUPT', `The bundle cannot be used: ${error.message}. Nothing was changed.`);
  }
}

function parseDocument(text: string): ThreadDocument | NamespaceDocument {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new Unusable('it is not JSON (truncated or damaged)');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Unusable('it is not a JSON object');
  const doc = raw as Record<string, unknown>;
  if (doc.format === 1) return checkNames(migrateV1(doc));
  if (doc.format !== FORMAT) throw new Unusable(`its format ${JSON.stringify(doc.format)} is not one this version reads (1 or ${FORMAT})`);
  if (typeof doc.records !== 'object' || doc.records === null || Array.isArray(doc.records)) throw new Unusable('it has no records');
  const records = doc.records as Record<string, unknown>;
  for (const [rel, r] of Object.entries(records)) checkSaved(rel, r);
  if (doc.kind === 'namespace') return { format: FORMAT, kind: 'namespace', records: records as Record<string, SavedRecord> };
  if (doc.kind !== 'thread' || typeof doc.thread !== 'string' || typeof doc.run !== 'string')
    throw new Unusable('it names no thread and run');
  return checkNames({ format: FORMAT, kind: 'thread', thread: doc.thread, run: doc.run, records: records as Record<string, SavedRecord> });
}

/** A thread document's thread and run ids are ones the server could have given (the thread becomes that run's). */
function checkNames(doc: ThreadDocument): ThreadDocument {
  for (const [what, value] of [
    ['thread', doc.thread],
    ['run', doc.run],
  ] as const) {
    try {
      checkName(what, value);
    } catch {
      throw new Unusable(`its ${what} id ${JSON.stringify(value.slice(0, 80))} is not valid`);
    }
  }
  return doc;
}

const isTime = (t: unknown): boolean => typeof t === 'number' && Number.isFinite(t) && Math.abs(t) <= MAX_TIME;

/** A user key (in a scope, not a family's record) is 1..512 characters, as every tool requires. */
function userKeyOk(rel: string): boolean {
  const key = relativeUserKey(rel);
  if (key === undefined) return true;
  const length = [...key].length;
  return length >= 1 && length <= MAX_KEY_CHARS;
}

function checkSaved(rel: string, r: unknown): asserts r is SavedRecord {
  const x = r as Partial<SavedRecord> | null;
  const ok =
    typeof x === 'object' &&
    x !== null &&
    'v' in x &&
    Number.isSafeInteger(x.ver) &&
    (x.ver as number) > 0 &&
    isTime(x.at) &&
    typeof x.by === 'string' &&
    (x.exp === undefined || isTime(x.exp)) &&
    isRelativeKey(rel) &&
    userKeyOk(rel);
  if (!ok) throw new Unusable(`record ${JSON.stringify(showRelative(rel))} is malformed`);
  if (nesting(x.v as Json, MAX_SAVED_DEPTH) > MAX_SAVED_DEPTH) {
    throw new Unusable(`the value of record ${JSON.stringify(showRelative(rel))} is nested more than ${MAX_SAVED_DEPTH} levels deep`);
  }
}

/**
 * A bundle's record must be one the tools could have written (a checkpoint's were, by the server itself): a user key
 * (as every tool checks it: no control characters, well-formed Unicode) in a scope a tool can name, or a record of a
 * family this version knows that decodes with the family's schema. A record in an unknown scope could never be read;
 * a malformed family record would make every tool that reads it fail; a key with a lone surrogate would be stored as
 * another key.
 */
function checkReachable(rel: string, value: Json): void {
  const scope = relativeScope(rel);
  const family = scope.startsWith('~') ? scope.slice(1).split(':')[0] : undefined;
  const problem = !rel.isWellFormed()
    ? 'its key is not well-formed Unicode (it has a lone surrogate)'
    : family !== undefined
      ? (familyKeyProblem(family, rel) ?? familyRecordProblem(family, value) ?? signKeyProblem(family, rel, value))
      : isScopeId(scope)
        ? userKeyProblem(rel)
        : 'its scope is not one a tool can name';
  if (problem !== undefined) throw new Unusable(`record ${JSON.stringify(showRelative(rel))} cannot be loaded: ${problem}`);
}

/** The keys of the families whose records are numbered: the number, zero-padded, as the services write it. */
const NUMBERED_KEYS: Record<string, RegExp> = {
  [FAMILY.history]: new RegExp(`^e:\\d{${SEQ_WIDTH}}$`),
  [FAMILY.message]: new RegExp(`^\\d{${SEQ_WIDTH}}$`),
  [FAMILY.mailbox]: new RegExp(`:\\d{${SEQ_WIDTH}}$`),
  [FAMILY.mailboxWait]: new RegExp(`^\\d{${SEQ_WIDTH}}$`),
};

/** Why a numbered family's record key is not one its service writes (a listing of the family would stop at it). */
function familyKeyProblem(family: string, rel: string): string | undefined {
  const re = NUMBERED_KEYS[family];
  return re === undefined || re.test(rel.slice(relativeScope(rel).length + 1)) ? undefined : `its key is not a ${family} record's`;
}

/**
 * Why a sign of life is not under its holder's key (its agent name or `-`, in its thread): the roster reads the holder
 * from the value, and mail to a name from the copies the import makes, so the two would name different agents.
 */
function signKeyProblem(family: string, rel: string, value: Json): string | undefined {
  if (family !== FAMILY.presence) return undefined;
  const { agent, thread } = value as { agent?: string; thread: string };
  const keys = keysOf(undefined);
  return keys.relative(keys.presence(agent, thread)) === rel ? undefined : "its key is not its holder's (agent and thread)";
}

/** Why no tool could name a record's user key (control characters, a separator among them), or undefined. */
function userKeyProblem(rel: string): string | undefined {
  try {
    checkKey(relativeUserKey(rel) ?? '');
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/\.$/, '');
  }
}

function migrateV1(doc: Record<string, unknown>): ThreadDocument {
  if (typeof doc.thread !== 'string' || typeof doc.run !== 'string' || typeof doc.records !== 'object' || doc.records === null) {
    throw new Unusable('it is a format-1 document without thread, run or records');
  }
  const records: Record<string, SavedRecord> = {};
  for (const [rel, r] of Object.entries(doc.records as Record<string, unknown>)) {
    const x = r as { value?: Json; version?: unknown; updatedAt?: unknown; updatedBy?: unknown } | null;
    const at = typeof x?.updatedAt === 'string' ? Date.parse(x.updatedAt) : NaN;
    if (!x || !('value' in x) || !Number.isSafeInteger(x.version) || Number.isNaN(at) || typeof x.updatedBy !== 'string') {
      throw new Unusable(`format-1 record ${JSON.stringify(rel)} is malformed`);
    }
    records[rel] = { v: x.value as Json, ver: x.version as number, at, by: x.updatedBy };
    checkSaved(rel, records[rel]);
  }
  return { format: FORMAT, kind: 'thread', thread: doc.thread, run: doc.run, records };
}
