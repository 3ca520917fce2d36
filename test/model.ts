// What the model-based tests share: a seeded random source (a run is replayed by its seed) and the things a test
// opened, closed after it whatever happened.
import { afterEach } from 'vitest';

/** A seeded source of numbers in [0, 1) (mulberry32): the same seed gives the same run. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A list to push closers on; they run after each test, last opened first, their failures ignored. */
export function closedAfterEachTest(): Array<() => Promise<unknown>> {
  const closing: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => {});
  });
  return closing;
}
