// Schemas shared by several tool families.
import * as z from 'zod';
import type { Json } from '../store/types.js';

// Argument and result schemas shared by several tool families. Descriptions are short on purpose: a model reads
// every one of them on every turn, so a shared argument is explained once (in the server's instructions) and only
// named here.

export const json = (schema: z.ZodType): z.ZodType<Json> => schema as z.ZodType<Json>;
export const jsonValue = z.unknown().describe('Any JSON value');
export const ifVersion = z.number().int().min(0).optional().describe('Expected version');
/** the same sentence in every schema that takes it */
export const idempotencyKey = z.string().optional().describe('Retry key; one per write');
export const threadArg = z.string().optional().describe('Default: this thread');
export const isoTime = z.string();
/** a version or revision in a result */
export const counter = z.number().int();
