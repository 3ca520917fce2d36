// Records as stored text: Keyv's `{"value": record}` envelope, the record check, corrupt-record errors.
import { BlackboardError } from '../errors.js';
import { listText, type Scratch } from './json-text.js';
import { showStorageKey } from './keys.js';
import type { StoredRecord } from './types.js';

/**
 * Records are kept in Keyv's own envelope, `{"value": <record>}`, so the same row reads the same through Keyv and
 * through a backend's raw queries. Expiry lives inside the record (`exp`), never in Keyv's `expires`: Keyv deletes
 * expired keys on read without a lock, which could delete a record another process has just rewritten.
 */
export const serialize = (data: unknown): string => JSON.stringify(data);
export const deserialize = <T>(raw: string): T => JSON.parse(raw) as T;

/** How a record's stored text begins, up to its revision's digits: the revision is written first. */
export const RECORD_PREFIX = '{"rev":';
/** The same in Keyv's envelope (SQLite). */
export const ENVELOPE_PREFIX = `{"value":${RECORD_PREFIX}`;

/**
 * A record's stored text: `JSON.stringify`'s, with the revision first (`{"rev":N,"v":…`), so that a large row's first
 * characters tell which commit wrote it (see `KnownRecords`). A list value grown from one the store holds is written
 * by {@link listText}.
 */
export const recordText = (record: StoredRecord): string => storedText(record, '', '');

/**
 * A record's stored text in Keyv's envelope (SQLite), `{"value":{"rev":N,…}}`, as {@link recordText}. Given `scratch`,
 * the text of a long list grown from one the store holds comes as UTF-8 bytes there (valid until it is reset; see
 * `Scratch`).
 */
export function envelopeText(record: StoredRecord): string;
export function envelopeText(record: StoredRecord, scratch?: Scratch): string | Buffer;
export function envelopeText(record: StoredRecord, scratch?: Scratch): string | Buffer {
  return storedText(record, '{"value":', '}', scratch);
}

function storedText(record: StoredRecord, open: string, close: string): string;
function storedText(record: StoredRecord, open: string, close: string, scratch?: Scratch): string | Buffer;
function storedText(record: StoredRecord, open: string, close: string, scratch?: Scratch): string | Buffer {
  const { rev, v, ...rest } = record;
  const tail = JSON.stringify(rest);
  const before = `${open}${RECORD_PREFIX}${JSON.stringify(rev)},"v":`;
  const after = `${tail === '{}' ? '' : `,${tail.slice(1, -1)}`}}${close}`;
  const text = listText(v, before, after, scratch);
  if (text !== undefined) return text;
  const first = { rev, v, ...rest };
  return JSON.stringify(open === '' ? first : { value: first });
}

export function isRecord(value: unknown): value is StoredRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    'v' in r &&
    Number.isSafeInteger(r.ver) &&
    Number.isSafeInteger(r.rev) &&
    typeof r.at === 'number' &&
    typeof r.by === 'string' &&
    (r.exp === undefined || typeof r.exp === 'number') &&
    (r.del === undefined || r.del === 1)
  );
}

/** Whether an error is the report of a corrupt stored record (see {@link corrupt}). */
export const isCorruptRecord = (error: unknown): boolean => error instanceof BlackboardError && error.details?.cause === 'CORRUPT_RECORD';

export function corrupt(key: string): BlackboardError {
  return new BlackboardError(
    'STORE_UNAVAILABLE',
    'A stored record is corrupt and cannot be read. Overwrite it with {tool:state_set} or delete it with {tool:state_delete}.',
    { storageKey: showStorageKey(key), cause: 'CORRUPT_RECORD' },
  );
}

/** A record from its stored JSON text (Postgres, Redis); text that is not a record is CORRUPT_RECORD for `key`. */
export function decodeRecord(key: string, raw: string): StoredRecord {
  return checked(key, () => JSON.parse(raw));
}

/** A record from Keyv's envelope `{"value": record}` (SQLite); reported as {@link decodeRecord} does, never crashed on. */
export function decodeEnvelope(key: string, raw: string): StoredRecord {
  return checked(key, () => (JSON.parse(raw) as { value?: unknown } | null)?.value);
}

function checked(key: string, parse: () => unknown): StoredRecord {
  let record: unknown;
  try {
    record = parse();
  } catch {
    throw corrupt(key);
  }
  if (!isRecord(record)) throw corrupt(key);
  return record;
}
