// Replies that do not grow with the data and waits that fit a client's timeout: value previews and wait caps.
import { isStoreFrozen } from '../store/frozen.js';
import { jsonBytes, jsonHead } from '../store/json-text.js';
import type { Json } from '../store/types.js';
import { fitPage, mapLazily } from '../services/page-fit.js';
import { READ_DEFAULT_BYTES, UPDATE_ECHO_BYTES, WAIT_CAP_MS, WAIT_DEFAULT_MS } from './common.js';
import type { Extra } from './define.js';

/**
 * A value bounded to `maxBytes` of JSON: as it is when it fits, else a preview — a string value's first bytes, or
 * any other value's JSON text cut short — with `truncated: true` and `bytes`, the full size of its JSON.
 */
export function boundValue(value: Json, maxBytes = READ_DEFAULT_BYTES): Bounded {
  const bytes = jsonBytes(value);
  if (bytes <= maxBytes) return { value };
  if (!isStoreFrozen(value) || maxBytes > PREVIEWS_UP_TO) return preview(value, maxBytes, bytes);
  // A value the store froze never changes, nor does its preview: a large record read again is previewed once.
  let bySize = previews.get(value);
  if (bySize === undefined || bySize.size >= 4) {
    bySize = new Map();
    previews.set(value, bySize);
  }
  const made = bySize.get(maxBytes) ?? preview(value, maxBytes, bytes);
  bySize.set(maxBytes, made);
  return made;
}

type Bounded = { value: Json; bytes?: number; truncated?: true };

/** Previews of values the store froze, by the size asked for (up to {@link PREVIEWS_UP_TO}), while the value lives. */
const previews = new WeakMap<object, Map<number, Bounded>>();
const PREVIEWS_UP_TO = 64 * 1024;

/** {@link boundValue}'s preview of a value of `bytes` bytes of JSON, over `maxBytes`. */
function preview(value: Json, maxBytes: number, bytes: number): Bounded {
  // Every character is at least one byte: the preview needs no more of the JSON text than maxBytes + 1 characters.
  const source = typeof value === 'string' ? value : jsonHead(value, maxBytes + 1);
  return Object.freeze({ value: cutJsonText(source, maxBytes), bytes, truncated: true as const });
}

/**
 * `source` cut (ending in "…") so that its JSON string — quotes and escapes included — is at most `maxBytes`: a text
 * of quotes or control characters takes two or six bytes of JSON per character, so cutting its UTF-8 is not enough.
 */
export function cutJsonText(source: string, maxBytes: number): string {
  const room = maxBytes - 8;
  const text = cutUtf8(source, room);
  if (jsonSize(text) <= maxBytes) return text;
  // escapes make its JSON longer than the text: the longest cut that fits
  return cutUtf8(
    source,
    largestFitting(0, room, (r) => jsonSize(cutUtf8(source, r)) <= maxBytes),
  );
}

/** One of `n` values' equal part of {@link READ_DEFAULT_BYTES}, at least 256 bytes. */
const shareOf = (n: number): number => Math.max(256, Math.floor(READ_DEFAULT_BYTES / Math.max(1, n)));

/**
 * Several updates' new values within one read's size together: a value larger than an equal share of
 * {@link READ_DEFAULT_BYTES} (at least 256 bytes), or than an update's echo ({@link UPDATE_ECHO_BYTES}), is left out;
 * its result still says it worked and its version.
 */
export function valuesWithin<T extends { value?: Json }>(results: T[]): T[] {
  const share = Math.min(UPDATE_ECHO_BYTES, shareOf(results.filter((result) => result.value !== undefined).length));
  return results.map((result) => {
    if (result.value === undefined || jsonBytes(result.value) <= share) return result;
    const { value: _left, ...rest } = result;
    return rest as T;
  });
}

/** The fewest bytes a text cut by {@link cutToFit} keeps: enough to tell most keys apart by their start. */
const MIN_CUT_BYTES = 24;

/**
 * A list whose JSON fits `maxBytes`, every item kept in its place: as it is when it fits, else each item as `cut`
 * makes it for one common `room` — its texts cut to `room` bytes (ending in "…"), anything larger left out — the
 * largest room that fits (at least {@link MIN_CUT_BYTES}, so a list of very many items may still be larger). Short
 * texts stay whole: only the longest are cut.
 */
export function cutToFit<T>(items: T[], maxBytes: number, cut: (item: T, room: number) => T): T[] {
  if (jsonBytes(items) <= maxBytes) return items;
  const fits = (room: number): boolean => jsonBytes(items.map((item) => cut(item, room))) <= maxBytes;
  // maxBytes: a room known not to fit, or no larger than any text
  const room = largestFitting(MIN_CUT_BYTES, maxBytes, fits);
  return items.map((item) => cut(item, room));
}

/**
 * The largest room from `lo` up to `hi` (a room known not to fit) that `fits`, by bisection; `lo` itself when none
 * above it does (the least allowed, whether it fits or not).
 */
function largestFitting(lo: number, hi: number, fits: (room: number) => boolean): number {
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** A saved record (`{v, ...}`, as a checkpoint's state holds it) whose value is over `share` bytes, as a preview that says `truncated: true` and `bytes`; any other record as it is. */
function recordWithin(record: unknown, share: number): unknown {
  const saved = record as { v?: Json } | null;
  const bounded = saved !== null && typeof saved === 'object' && saved.v !== undefined ? boundValue(saved.v, share) : undefined;
  return bounded?.truncated ? { ...saved, v: bounded.value, truncated: true, bytes: bounded.bytes } : record;
}

/**
 * A page of saved records (a checkpoint's state) within `budget` bytes of JSON, `used` of them taken already: the
 * records after the key `after` (in their order), their values sharing {@link READ_DEFAULT_BYTES} (an equal part of it
 * each, at least 256 bytes, a larger one previewed), as many as fit with room for the cursor `cursorOf` makes of the
 * last (the first always); `last` is that key when more follow. Only the records looked at are previewed.
 */
export function recordsPage(
  records: Record<string, unknown>,
  page: { budget: number; used: number; after?: string; cursorOf: (key: string) => string },
): { records: Record<string, unknown>; last?: string } {
  const { budget, used, after, cursorOf } = page;
  const keys = Object.keys(records);
  const rest = after === undefined ? keys : keys.slice(keys.indexOf(after) + 1);
  const share = shareOf(rest.length);
  const bounded = mapLazily(rest, (key) => ({ key, record: recordWithin(records[key], share) }));
  const fitted = fitPage(bounded, budget, ({ key, record }) => jsonBytes(key) + jsonBytes(record ?? null) + 2, {
    used,
    ending: ({ key }) => jsonBytes({ nextCursor: cursorOf(key) }),
  });
  return {
    records: Object.fromEntries(fitted.kept.map(({ key, record }) => [key, record])),
    ...(fitted.stopped ? { last: fitted.kept.at(-1)?.key } : {}),
  };
}

/** A text of at most `maxBytes` UTF-8 bytes (never splitting a character), with "…" when cut. */
export function cutUtf8(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  // Only the start is encoded (every character is at least one byte): a large value's whole text never is.
  const buffer = Buffer.from(text.slice(0, maxBytes + 1), 'utf8');
  let end = Math.max(0, maxBytes - 3);
  while (end > 0 && (buffer[end] & 0xc0) === 0x80) end--;
  return `${buffer.subarray(0, end).toString('utf8')}…`;
}

/**
 * How long a blocking call may wait: `waitMs` (default 25 s), capped at 50 s when the request carries no progress
 * token — a client that gets no progress gives up at 60 s — and up to the schema's 10 minutes when it does.
 */
export function waitOf(extra: Extra, waitMs: number | undefined): number {
  const asked = waitMs ?? WAIT_DEFAULT_MS;
  return extra._meta?.progressToken === undefined ? Math.min(asked, WAIT_CAP_MS) : asked;
}

function jsonSize(text: string): number {
  return Buffer.byteLength(JSON.stringify(text), 'utf8');
}
