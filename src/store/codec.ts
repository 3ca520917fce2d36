import { BlackboardError } from '../errors.js';
import { showStorageKey } from './keys.js';
import type { StoredRecord } from './types.js';

/**
 * Records are kept in Keyv's own envelope, `{"value": <record>}`, so the same row reads the same through Keyv and
 * through a backend's raw queries. Expiry lives inside the record (`exp`), never in Keyv's `expires`: Keyv deletes
 * expired keys on read without a lock, which could delete a record another process has just rewritten.
 */
export const serialize = (data: unknown): string => JSON.stringify(data);
export const deserialize = <T>(raw: string): T => JSON.parse(raw) as T;

export const encodeRecord = (record: StoredRecord): string => serialize({ value: record });

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
export const isCorruptRecord = (error: unknown): boolean =>
  error instanceof BlackboardError && error.details?.cause === 'CORRUPT_RECORD';

export function corrupt(key: string): BlackboardError {
  return new BlackboardError(
    'STORE_UNAVAILABLE',
    'A stored record is corrupt and cannot be read. Overwrite it with {tool:state_set} or delete it with {tool:state_delete}.',
    { storageKey: showStorageKey(key), cause: 'CORRUPT_RECORD' },
  );
}

/** Decodes a raw envelope; a row that is not a well-formed record is reported, never crashed on. */
export function decodeRecord(key: string, raw: string): StoredRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw corrupt(key);
  }
  const record = (parsed as { value?: unknown } | null)?.value;
  if (!isRecord(record)) throw corrupt(key);
  return record;
}
