import { describe, expect, it } from 'vitest';
import { fitPage, fitPageFromEnd, mapLazily } from '../../src/services/page-fit.js';

/** Items whose size is their value. */
const own = (n: number): number => n;

describe('fitPage', () => {
  it('keeps nothing of an empty list, and has not stopped', () => {
    expect(fitPage([], 10, own)).toEqual({ kept: [], stopped: false });
    expect(fitPage([], 0, own, { used: 100 })).toEqual({ kept: [], stopped: false });
  });

  it('keeps the first item alone over the budget, and stops at the next', () => {
    expect(fitPage([50, 1], 10, own)).toEqual({ kept: [50], stopped: true, next: 1 });
    expect(fitPage([50], 10, own)).toEqual({ kept: [50], stopped: false });
    // even when what the page takes before any item is over the budget already
    expect(fitPage([1, 1], 10, own, { used: 20 })).toEqual({ kept: [1], stopped: true, next: 1 });
  });

  it('keeps an item that fits exactly, and stops one byte over', () => {
    expect(fitPage([4, 3, 3], 10, own)).toEqual({ kept: [4, 3, 3], stopped: false });
    expect(fitPage([4, 3, 3, 1], 10, own)).toEqual({ kept: [4, 3, 3], stopped: true, next: 1 });
    expect(fitPage([4, 3, 4], 10, own)).toEqual({ kept: [4, 3], stopped: true, next: 4 });
    expect(fitPage([3, 3], 10, own, { used: 4 })).toEqual({ kept: [3, 3], stopped: false });
    expect(fitPage([3, 4], 10, own, { used: 4 })).toEqual({ kept: [3], stopped: true, next: 4 });
  });

  it('stops at the first item that does not fit, even when a later one would', () => {
    expect(fitPage([5, 6, 1], 10, own)).toEqual({ kept: [5], stopped: true, next: 6 });
  });

  it('checks the ending an item would need without adding it to the page', () => {
    const ending = (): number => 2;
    // 3 + 3 + 2 fits, 3 + 3 + 3 + 2 does not: the ending is counted once, for the item that would end the page
    expect(fitPage([3, 3, 3], 10, own, { ending })).toEqual({ kept: [3, 3], stopped: true, next: 3 });
    expect(fitPage([3, 3, 4], 10, own, { ending })).toEqual({ kept: [3, 3], stopped: true, next: 4 });
    expect(fitPage([3, 5], 10, own, { ending })).toEqual({ kept: [3, 5], stopped: false });
  });

  it('keeps zero-sized items while the page is within its budget', () => {
    expect(fitPage([10, 0, 0, 1], 10, own)).toEqual({ kept: [10, 0, 0], stopped: true, next: 1 });
  });

  it('makes no item of a lazy list after the one that ended the page', () => {
    const made: number[] = [];
    const items = mapLazily([6, 6, 6, 6], (n) => {
      made.push(n);
      return n;
    });
    expect(fitPage(items, 10, own)).toEqual({ kept: [6], stopped: true, next: 6 });
    expect(made).toEqual([6, 6]);
    expect([...mapLazily([1, 2], (n) => n * 10)]).toEqual([10, 20]);
  });

  it('keeps every item of an unbounded budget', () => {
    expect(fitPage([1e9, 1e9], Number.POSITIVE_INFINITY, own, { used: 1e9 })).toEqual({ kept: [1e9, 1e9], stopped: false });
  });
});

describe('fitPageFromEnd', () => {
  it('keeps nothing of an empty list', () => {
    expect(fitPageFromEnd([], 10, own)).toEqual({ kept: [], stopped: false });
  });

  it('keeps the last items that fit, in their order, and names the newest left out', () => {
    expect(fitPageFromEnd([1, 2, 5, 3, 2], 10, own)).toEqual({ kept: [5, 3, 2], stopped: true, next: 2 });
    expect(fitPageFromEnd([1, 4, 3, 3], 10, own)).toEqual({ kept: [4, 3, 3], stopped: true, next: 1 });
    expect(fitPageFromEnd([4, 3, 3], 10, own)).toEqual({ kept: [4, 3, 3], stopped: false });
  });

  it('keeps the last item alone over the budget', () => {
    expect(fitPageFromEnd([1, 50], 10, own)).toEqual({ kept: [50], stopped: true, next: 1 });
  });

  it('leaves the list it was given as it was', () => {
    const items = [1, 2, 3];
    fitPageFromEnd(items, 4, own);
    expect(items).toEqual([1, 2, 3]);
  });
});
