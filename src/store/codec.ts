// Records as stored text: Keyv's `{"value": record}` envelope, the record check, corrupt-record errors.
import { BlackboardError } from '../errors.js';
import { jsonText } from './json-text.js';
import { showStorageKey } from './keys.js';
import type { StoredRecord } from './types.js';

/**
 * Records are kept in Keyv's own envelope, `{"value": <record>}`, so the same row reads the same through Keyv and
 * through a backend's raw queries. Expiry lives inside the record (`exp`), never in Keyv's `expires`: Keyv deletes
 * expired keys on read without a lock, which could delete a record another process has just rewritten.
 */
export const serialize = (data: unknown): string => JSON.stringify(data);
export const deserialize = <T>(raw: string): T => JSON.parse(raw) as T;

/**
 * A record's stored text, `JSON.stringify`'s text of it with the revision first (`{"rev":N,"v":…`): a large row's
 * first characters then tell which commit wrote it (see `KnownRecords`). The value is written by {@link jsonText}.
 */
export function recordText(record: StoredRecord): string {
  const { rev, v, ...rest } = record;
  const tail = JSON.stringify(rest);
  return `{"rev":${JSON.stringify(rev)},"v":${v === undefined ? 'null' : jsonText(v)}${tail === '{}' ? '}' : `,${tail.slice(1)}`}`;
}

/** A record's stored text in Keyv's envelope (SQLite), revision first as in {@link recordText}. */
export const envelopeText = (record: StoredRecord): string => `{"value":${recordText(record)}}`;

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
