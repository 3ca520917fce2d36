import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBlackboard } from '../../src/index.js';
import { tempDir } from '../contract/backends.js';
import { startUi } from './ui-helpers.js';

// Names and values as long as the rules allow, without a space to break at: agents and threads of 128 characters,
// a history event and a step of one long word. The page must still fit its width (it works at 1280×800 and phone
// width): nothing pushes the page wider or out of its card.
const CHROMIUM = process.env.BLACKBOARD_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);

describe.skipIf(!haveChromium)('the board with long names', () => {
  let child: ChildProcess;
  let url: string;
  let browser: Browser;

  beforeAll(async () => {
    const store = `sqlite://${join(tempDir(), 'long.db')}`;
    const agent = `a${'z'.repeat(127)}`;
    const bb = await openBlackboard({ store, agent, thread: `t${'q'.repeat(127)}` });
    await bb.kv.set({ key: 'k'.repeat(512), value: { ['x'.repeat(300)]: 'v'.repeat(3000) } });
    await bb.plans.create({ title: 'T'.repeat(300), steps: ['S'.repeat(1000)], scope: 'global' });
    await bb.history.append({ kind: 'tool_call', content: 'H'.repeat(2000) });
    await bb.finalAnswer.set({ content: 'F'.repeat(2000) });
    await bb.close();
    ({ child, url } = await startUi(['--store', store, '--port', '0']));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
  });
  afterAll(async () => {
    await browser?.close();
    child?.kill();
  });

  it.each([1280, 390])('fits %ipx: no horizontal overflow, nothing wider than its card', async (width) => {
    const page = await browser.newPage({ viewport: { width, height: 800 } });
    await page.goto(url);
    await page.locator('#conn[data-state="live"]').waitFor();
    await page.locator('.thread').first().waitFor();
    await page.locator('.change').first().waitFor();
    const fit = await page.evaluate(() => ({
      page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      cards: [...document.querySelectorAll('.card, .change')]
        .filter((c) => c.scrollWidth > c.clientWidth + 1)
        .map((c) => `${c.className}: ${c.scrollWidth - c.clientWidth}px too wide`),
    }));
    expect(fit).toEqual({ page: 0, cards: [] });
    await page.close();
  });
});
