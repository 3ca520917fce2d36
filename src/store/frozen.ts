// Values shared by reference between the store and its callers are frozen all the way down, so no caller can change
// what another (or a later read) sees.
import type { Json } from './types.js';

/**
 * Freezes `value` and everything in it, in place, and returns it. A part that is already frozen is taken as frozen all
 * the way down (only this function freezes store values), so freezing a list that grew by one element from a frozen
 * list walks only the new element.
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
