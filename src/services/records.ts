// Family records as stored: decoded once through a schema (a corrupt one is reported, not crashed on), encoded as JSON.
import * as z from 'zod';
import { BlackboardError } from '../errors.js';
import type { Json } from '../store/types.js';

/** Any JSON value, passed through as it is (user values keep their exact shape, `__proto__` keys included). */
export const anyJson = z.custom<Json>((value) => value !== undefined);

/** Decodes a stored record of a family; a record that does not fit its schema is STORE_UNAVAILABLE (corrupt). */
export function decode<T>(schema: z.ZodType<T>, value: Json, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new BlackboardError(
    'STORE_UNAVAILABLE',
    `A stored ${what} record is corrupt and cannot be read. Ask the operator to check the store; nothing was changed.`,
    { cause: 'CORRUPT_RECORD', record: what },
  );
}

/** A family record as the JSON the store keeps: records are plain JSON objects by construction. */
export const encode = <T extends object>(record: T): Json => record as unknown as Json;
