// Argument and result schemas shared by every tool family, with their one short description each.
import * as z from 'zod';
import type { Json } from '../store/types.js';

// A model reads every description on every turn: a shared argument is described once, briefly, and the same way
// in every tool that takes it. Numbers are plain `minimum`/`maximum` bounds (no exclusive bounds), every property
// has one type, and an optional argument sent as null counts as not given (see argument-errors.ts).

export const json = (schema: z.ZodType): z.ZodType<Json> => schema as z.ZodType<Json>;
/** a value that is any JSON: the one kind of property left untyped */
/** how an any-JSON value is described in argument schemas */
export const ANY_JSON = 'Any JSON value';
export const jsonValue = z.unknown().describe(ANY_JSON);

export const scope = z.string().optional().describe('Default global');
export const ifVersion = z.number().int().min(0).optional().describe('Version read; 0: new');
export const idempotencyKey = z.string().optional().describe('Retry-safe');
/** a thread to read other than the caller's (the caller's when left out: needs no description) */
export const threadArg = z.string().optional();
/** a list's nextCursor, passed back (the descriptions say so) */
export const cursor = z.string().optional();

/** Default and largest value bytes of a bounded read. */
export const READ_DEFAULT_BYTES = 16 * 1024;
export const READ_MAX_BYTES = 1024 * 1024;
/**
 * How much of the value it wrote an update's reply carries: the new value whole up to this, else a preview (a caller
 * that appends to a long list knows what it appended; echoing the list's start cost its context on every call).
 */
export const UPDATE_ECHO_BYTES = 2 * 1024;
/** a bounded read's size (default {@link READ_DEFAULT_BYTES}; the read tools' descriptions name it) */
export const maxBytes = z.number().int().min(64).max(READ_MAX_BYTES).optional();

/** Waits of blocking tools, in ms: the default, the cap without a progress token, and the cap with one. */
export const WAIT_DEFAULT_MS = 25_000;
export const WAIT_CAP_MS = 50_000;
export const WAIT_MAX_MS = 600_000;
export const waitMs = z.number().int().min(0).max(WAIT_MAX_MS).optional().describe(`Default ${WAIT_DEFAULT_MS}`);

export const isoTime = z.string();
/** a version or revision in a result */
export const counter = z.number().int();
/** how a bounded value came back: `bytes` is its full size, `truncated` says the value is a preview */
export const bounded = { bytes: counter.optional(), truncated: z.boolean().optional() };
