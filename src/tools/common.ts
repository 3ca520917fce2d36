import * as z from 'zod';
import type { Json } from '../store/types.js';

// Argument and result schemas shared by several tool families.

export const json = (schema: z.ZodType): z.ZodType<Json> => schema as z.ZodType<Json>;
export const jsonValue = z.unknown().describe('Any JSON value (object, array, string, number, boolean or null).');
export const ifVersion = z
  .number()
  .int()
  .optional()
  .describe('Compare-and-set: only write if the current version is this one (0 = only if it does not exist).');
export const idempotencyKey = z
  .string()
  .optional()
  .describe('Any unique string; a retry with the same key returns the first result and applies nothing again.');
export const threadArg = z.string().optional().describe('Another thread\'s id (default: this thread).');
export const isoTime = z.string().describe('ISO 8601 time');
