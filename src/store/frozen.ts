// Values shared by reference between the store and its callers are frozen all the way down, so no caller can change
// what another (or a later read) sees.
import type { Json } from './types.js';

/**
 * Freezes `value` and everything in it, in place, and returns it. A part that is already frozen is taken as frozen all
 * the way down (only this module freezes store values, and always all the way down), so freezing a list that grew by
 * one element from a frozen list walks only the new element.
 */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null || Object.isFrozen(v)) continue;
    Object.freeze(v);
    if (Array.isArray(v)) {
      for (const element of v) if (typeof element === 'object' && element !== null) stack.push(element);
    } else {
      for (const key in v) {
        const child = (v as Record<string, Json>)[key];
        if (typeof child === 'object' && child !== null) stack.push(child);
      }
    }
  }
  return value;
}

/**
 * A frozen copy of `value`, deep, that shares the parts of it already frozen (so a list that grew by one element from
 * a frozen list costs the new element and the list itself). `value` is left as it was: a caller keeps its own objects
 * changeable.
 */
export function frozenCopy<T extends Json>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  if (Array.isArray(value)) return Object.freeze(value.map((element) => frozenCopy(element))) as T;
  const copy: { [key: string]: Json } = {};
  for (const key of Object.keys(value)) {
    // defined rather than assigned: "__proto__" is an ordinary key of a JSON value
    Object.defineProperty(copy, key, { value: frozenCopy(value[key]), enumerable: true, writable: true, configurable: true });
  }
  return Object.freeze(copy) as T;
}
