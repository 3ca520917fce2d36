import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open.js';
import { tempDir } from '../contract/backends.js';
import { startUi } from './ui-helpers.js';

// Three agent processes work a plan (examples/work-queue.mjs) while a person watches the board: the page shows the
// steps being claimed and finished live, without a reload.
const CHROMIUM = process.env.BLACKBOARD_CHROMIUM ?? '/usr/bin/chromium';
const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'work-queue.mjs');

describe.skipIf(!existsSync(CHROMIUM))('the board while agents work a plan', () => {
  it("shows steps claimed by their owners, workers working, a killed worker's claim lapsing, and the plan complete, live", async () => {
    const store = `sqlite://${join(tempDir(), 'queue.db')}`;
    await (await openStore(store)).close(); // the board never creates a store
    const { child: ui, url } = await startUi(['--store', store, '--port', '0']);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const page = await browser.newPage();
      let navigations = 0;
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) navigations++;
      });
      await page.goto(url);
      await page.locator('#conn[data-state="live"]').waitFor();
      const loadsBefore = navigations;

      const example = spawn(process.execPath, [EXAMPLE], {
        env: { ...process.env, BLACKBOARD_STORE: store, WORK_MS: '700' },
        stdio: 'pipe',
      });
      let output = '';
      example.stdout!.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise<number | null>((resolve) => example.on('exit', resolve));

      // The plan appears, then steps in progress with their owners, then all of them done.
      const plan = page.locator('.plan', { hasText: 'Release 1.0' });
      await plan.waitFor({ timeout: 15_000 });
      // Workers holding steps show as working, and the killed worker's claim lapses back to the queue (its step says so).
      const owners = new Set<string>();
      const working = new Set<string>();
      let sawInProgress = false;
      let sawLapse = false;
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline) {
        const text = (await plan.textContent()) ?? '';
        for (const owner of await plan.locator('.chip.owner').allInnerTexts()) owners.add(owner);
        for (const t of await page.locator('.thread').all()) {
          const badge = await t
            .locator('.badge')
            .first()
            .textContent()
            .catch(() => null);
          const holds = await t
            .locator('.holds')
            .count()
            .catch(() => 0);
          if (badge === 'working' && holds > 0) working.add((await t.getAttribute('data-thread').catch(() => null)) ?? '');
        }
        if (text.includes('◐')) sawInProgress = true;
        if (text.includes('1 lapsed claim')) sawLapse = true;
        if (/5\/5/.test(text) && sawLapse) break;
        await page.waitForTimeout(100);
      }
      expect(await plan.textContent()).toMatch(/5\/5/);
      expect(sawInProgress).toBe(true);
      expect(sawLapse).toBe(true);
      expect([...working].filter((t) => /^worker-[ab]$/.test(t)).length).toBeGreaterThanOrEqual(1);
      // A finished plan is complete (green), not at a limit.
      await plan.locator('.badge.p-complete').waitFor({ timeout: 5000 });
      await expect(plan.locator('.bar.done').count()).resolves.toBe(1);
      await expect(plan.locator('.bar.full').count()).resolves.toBe(0);
      expect([...owners].every((o) => /^worker-[abc]$/.test(o))).toBe(true);
      expect(owners.size).toBeGreaterThanOrEqual(2);
      expect(navigations).toBe(loadsBefore); // never reloaded
      expect(await exited).toBe(0);
      expect(output).toMatch(/all 5 steps completed/);
    } finally {
      await browser.close();
      ui.kill();
    }
  });
});
