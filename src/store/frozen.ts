// Values shared by reference between the store and its callers are frozen all the way down, so no caller can change
// what another (or a later read) sees. The store knows which objects it froze: facts about them (their JSON size,
// text, nesting) hold for good and are remembered (see `json-text.ts`).
import type { Json } from './types.js';

/** Objects the store froze, all the way down. A caller's own frozen object is not one: its insides may still change. */
const storeFrozen = new WeakSet<object>();

/** Whether `value` is an object the store froze all the way down (so it never changes). */
export const isStoreFrozen = (value: unknown): value is object => typeof value === 'object' && value !== null && storeFrozen.has(value);

/**
 * Freezes `value` and everything in it, in place, and returns it (for values the store parsed itself). A part the store
 * froze before is frozen all the way down already, so freezing a list that grew by one element from a frozen list
 * walks only the new element.
 */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null || storeFrozen.has(v)) continue;
    Object.freeze(v);
    storeFrozen.add(v);
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
 * A frozen copy of `value`, deep, that shares the parts of it the store froze before (so a list that grew by one
 * element from a frozen list costs the new element and the list itself). `value` is left as it was: a caller keeps
 * its own objects changeable, and a caller's own frozen object is copied like any other.
 */
export function frozenCopy<T extends Json>(value: T): T {
  if (typeof value !== 'object' || value === null || storeFrozen.has(value)) return value;
  // what is stored of an object with its own toJSON (a Date) is what that returns, as JSON
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    const text = JSON.stringify(value); // undefined when toJSON returns nothing: then the value is left out, as there
    return (text === undefined ? undefined : deepFreeze(JSON.parse(text))) as T;
  }
  let copy: Json[] | { [key: string]: Json };
  // As the stored text has it: what JSON leaves out of a list is null there, and left out of an object.
  if (Array.isArray(value)) copy = value.map((element) => frozenCopy(element) ?? null);
  else {
    copy = {};
    for (const key of Object.keys(value)) {
      const member = frozenCopy(value[key]);
      if (member === undefined) continue;
      // defined rather than assigned: "__proto__" is an ordinary key of a JSON value
      Object.defineProperty(copy, key, { value: member, enumerable: true, writable: true, configurable: true });
    }
  }
  storeFrozen.add(Object.freeze(copy));
  return copy as T;
}
