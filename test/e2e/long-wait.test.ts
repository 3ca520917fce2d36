import { afterAll, describe, expect, it } from 'vitest';
import { spawnAgent, type Spawned } from '../helpers.js';

// A wait longer than a client's request timeout: the SDK client gives up at 60 s unless progress resets its clock.
// Both cases run at once against one spawned server with the default profile, so the file takes about 90 s.
const started: Spawned[] = [];
afterAll(async () => {
  for (const s of started) await s.close();
});

describe('waits that fit client timeouts', () => {
  it.concurrent("a 90 s watch with the SDK client's default options ends at 50 s with timedOut:true, not a transport error", async () => {
    const a = await spawnAgent(['--store', 'memory://']);
    started.push(a);
    const t0 = performance.now();
    const result = await a.raw('watch', { key: 'never', waitMs: 90_000 });
    const seconds = (performance.now() - t0) / 1000;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ found: false, timedOut: true });
    expect(seconds).toBeGreaterThanOrEqual(49.5);
    expect(seconds).toBeLessThan(58);
  }, 120_000);

  it.concurrent('with a progress token and resetTimeoutOnProgress the same watch waits the full 90 s, with progress at least every 15 s', async () => {
    const a = await spawnAgent(['--store', 'memory://']);
    started.push(a);
    const ticks: number[] = [];
    const t0 = performance.now();
    const result = await a.raw(
      'watch',
      { key: 'never', waitMs: 90_000 },
      { onprogress: () => void ticks.push(performance.now()), resetTimeoutOnProgress: true },
    );
    const seconds = (performance.now() - t0) / 1000;
    expect(result.structuredContent).toEqual({ found: false, timedOut: true });
    expect(seconds).toBeGreaterThanOrEqual(89.5);
    expect(ticks.length).toBeGreaterThanOrEqual(6);
    const gaps = ticks.map((t, i) => (t - (i === 0 ? t0 : ticks[i - 1])) / 1000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(15);
  }, 150_000);
});
