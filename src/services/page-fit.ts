// Fitting a page into a byte budget, for every listing that pages by size: items are kept in order while the page's
// bytes allow, the first always — so a page is never empty, and a cursor given after it always moves.

/** What a fit kept, in order, and whether it stopped before an item (`next`, the first one left out). */
export type Fitted<T> = { kept: T[]; stopped: false } | { kept: T[]; stopped: true; next: T };

export interface FitOptions<T> {
  /** bytes the page takes before any item: its envelope, room for a cursor */
  used?: number;
  /** bytes the page would also need were it to end after `item` (the cursor naming it): checked, not added */
  ending?: (item: T) => number;
}

/**
 * The first `items` whose sizes, added to `used`, stay within `budget` — the first item whatever its size. An item
 * that does not fit ends the page: none after it is looked at (nor, when `items` is lazy, made).
 */
export function fitPage<T>(items: Iterable<T>, budget: number, sizeOf: (item: T) => number, options: FitOptions<T> = {}): Fitted<T> {
  const kept: T[] = [];
  let bytes = options.used ?? 0;
  for (const item of items) {
    const size = sizeOf(item);
    if (kept.length > 0 && bytes + size + (options.ending?.(item) ?? 0) > budget) return { kept, stopped: true, next: item };
    kept.push(item);
    bytes += size;
  }
  return { kept, stopped: false };
}

/** {@link fitPage} from the other end: the last `items` that fit (the last always), in their order; `next` is the newest left out. */
export function fitPageFromEnd<T>(
  items: readonly T[],
  budget: number,
  sizeOf: (item: T) => number,
  options: FitOptions<T> = {},
): Fitted<T> {
  const fitted = fitPage([...items].reverse(), budget, sizeOf, options);
  fitted.kept.reverse();
  return fitted;
}

/** `items` mapped by `make` one at a time, as a fit asks for them: no item past the end of a page is made (or measured). */
export function* mapLazily<S, T>(items: Iterable<S>, make: (item: S) => T): Generator<T> {
  for (const item of items) yield make(item);
}
