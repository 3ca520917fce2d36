import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { spawnAgent, type Spawned } from '../helpers.js';
import { startUi, type Ui } from './ui-helpers.js';

// What agents write is shown to people: markup in any text an agent controls must show as text and run nothing.
const CHROMIUM = process.env.BLACKBOARD_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);

/** Markup that, if parsed as HTML anywhere, sets `window.__ran` (or opens a dialog, or loads something). */
const hostile = (where: string): string =>
  `${where}<img src=x onerror="window.__ran=(window.__ran||[]).concat('${where}')"><script>window.__ran=['${where}']</script>` +
  `<svg onload="alert('${where}')"></svg>"'><a href="javascript:alert('${where}')">link</a><style>*{display:none}</style>`;

describe.skipIf(!haveChromium)('agent-written markup on the board', () => {
  let ui: Ui;
  let evil: Spawned;
  let other: Spawned;
  let context: BrowserContext;

  beforeAll(async () => {
    const store = ['--store', `sqlite://${join(tempDir(), 'hostile.db')}`];
    evil = await spawnAgent([...store, '--agent', 'evil', '--thread', 'evil-thread']);
    other = await spawnAgent([...store, '--agent', 'other', '--thread', 'other-thread']);
    await other.ok('team_list');
    await evil.ok('agent_state_set', { state: 'running' });
    await evil.ok('agent_state_set', { state: 'awaiting_user_input', reason: hostile('reason') });
    await evil.ok('state_set', { key: hostile('key'), value: hostile('value') });
    await evil.ok('state_set', { key: 'folded', value: { text: hostile('folded'), pad: 'x'.repeat(200) } });
    await evil.ok('plan_create', { title: hostile('title'), steps: [hostile('step'), { content: 'b', note: hostile('note') }] });
    await evil.ok('history_append', { kind: 'observation', content: hostile('event'), data: { d: hostile('data') } });
    await evil.ok('signal', { kind: 'explore', confidence: 0.5, note: hostile('signal') });
    await evil.ok('message_send', { to: 'other', content: hostile('message') });
    await evil.ok('final_answer_set', { content: hostile('answer'), metadata: { m: hostile('metadata') } });
    ui = await startUi([...store, '--port', '0']);
    context = await chromium.launchPersistentContext(join(tempDir(), 'chromium-profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  });
  afterAll(async () => {
    await context?.close();
    ui?.child.kill();
    await evil?.close();
    await other?.close();
  });

  it('shows it as text in every section and runs none of it', async () => {
    const page = await context.newPage();
    const dialogs: string[] = [];
    const requests: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(ui.url);
    await page.locator('#conn[data-state="live"]').waitFor();
    await page.locator('.thread .final .text').waitFor();
    await page.locator('.message .text').waitFor();
    // every fold opened, every key's own timeline shown, the search used: each renders what agents wrote
    for (const fold of await page.locator('details').all()) await fold.evaluate((d) => ((d as HTMLDetailsElement).open = true));
    for (const key of await page.locator('button.key-name').all()) await key.click();
    await page.fill('#key-search', 'onerror');
    await page.locator('#keys-shown', { hasText: 'Showing 2 of 2 matching keys' }).waitFor();

    expect(await page.locator('.thread .final .text').textContent()).toBe(hostile('answer'));
    expect(await page.locator('.thread .reason').textContent()).toBe(`“${hostile('reason')}”`);
    expect(await page.locator('.plan h3').textContent()).toBe(hostile('title'));
    expect(await page.locator('.message .text').textContent()).toBe(hostile('message'));
    expect(await page.locator('button.key-name').allTextContents()).toContain(hostile('key'));
    const shown = await page.locator('main').textContent();
    for (const where of ['value', 'folded', 'step', 'note', 'event', 'signal']) expect(shown).toContain(`${where}<img src=x onerror=`);
    // nothing ran, nothing was loaded from elsewhere, no element came from the markup
    expect(await page.evaluate(() => (window as { __ran?: unknown }).__ran)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(await page.locator('main img, main script, main svg, main style, main a[href^="javascript"]').count()).toBe(0);
    expect(requests.filter((url) => !url.startsWith(ui.url))).toEqual([]);
  });
});
