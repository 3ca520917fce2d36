import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { spawnAgent, type Spawned } from '../helpers.js';
import { startUi, type Ui } from './ui-helpers.js';

// The board in a real browser: Debian's Chromium driven by playwright-core, the `ui` subcommand of the built bin on
// a temp SQLite store, and agents writing through real MCP clients in other processes.
const CHROMIUM = process.env.BLACKBOARD_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`ui.test.ts: skipped, no Chromium at ${CHROMIUM} (apt-get install -y --no-install-recommends chromium).`);
const SHOTS = join(import.meta.dirname, '..', '..', 'test-results', 'ui');

/** Starts `mcp-blackboard ui`: it writes nothing to stdout. */
async function startQuietUi(args: string[]): Promise<Ui> {
  const ui = await startUi(args);
  expect(ui.stdout()).toBe('');
  return ui;
}

describe.skipIf(!haveChromium)('the board in a browser', () => {
  let db: string;
  let ui: Ui;
  let planner: Spawned;
  let worker: Spawned;
  let context: BrowserContext;
  let planId: string;
  const requests: string[] = [];
  const problems: string[] = [];

  /** Records the page's requests and its console errors (a page that lives through a server outage may log refusals). */
  const watchPage = (page: Page, outage = false): Page => {
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => {
      if (outage && m.text().includes('net::ERR_CONNECTION_REFUSED')) return;
      if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    return page;
  };
  const board = async (outage = false): Promise<Page> => {
    const page = watchPage(await context.newPage(), outage);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(ui.url);
    await page.locator('#conn[data-state="live"]').waitFor();
    await page.locator('.thread').first().waitFor();
    return page;
  };

  beforeAll(async () => {
    const dir = tempDir();
    db = join(dir, 'board.db');
    const store = ['--store', `sqlite://${db}`, '--allow-budget-admin', '--max-iterations', '10'];
    planner = await spawnAgent([...store, '--agent', 'planner', '--thread', 'research-root']);
    worker = await spawnAgent([...store, '--agent', 'worker-1', '--thread', 'worker-1-thread', '--parent-thread', 'research-root']);

    await planner.ok('agent_state_set', { state: 'running' });
    await planner.ok('state_set', { key: 'task', value: 'Compare three vector databases and recommend one.' });
    await planner.ok('state_set', {
      key: 'config',
      value: {
        model: 'sonnet',
        temperature: 0.2,
        languages: ['en', 'de'],
        notes: 'Keep the answer under 300 words and cite every benchmark with its source.',
      },
    });
    await planner.ok('state_set', { key: 'lock:writer', value: 'worker-1', ttlSeconds: 600 });
    await planner.ok('state_set', { key: 'draft', value: 'Working notes', scope: 'thread' });
    ({ planId } = await planner.ok('plan_create', {
      title: 'Vector database comparison',
      scope: 'global',
      steps: [
        'Collect candidates',
        'Benchmark latency',
        { content: 'Compare hosting costs', blockedBy: ['s1'] },
        { content: 'Write the recommendation', blockedBy: ['s2', 's3'] },
      ],
    }));
    await planner.ok('plan_update', {
      planId,
      stepUpdates: [
        { id: 's1', status: 'completed', owner: 'worker-1' },
        { id: 's2', status: 'in_progress', owner: 'planner', note: 'p95 over 10k queries' },
      ],
    });
    await planner.ok('budget_configure', { name: 'iterations', max: 20 });
    await planner.ok('budget_step', { amount: 4 });
    await planner.ok('history_append', { kind: 'tool_call', content: 'web_search("vector database benchmarks")' });
    await planner.ok('signal', { kind: 'explore', confidence: 0.4, note: 'two benchmarks disagree' });

    await worker.ok('agent_state_set', { state: 'running' });
    await worker.ok('budget_configure', { name: 'iterations', max: 5 });
    await worker.ok('budget_step', { amount: 3 });
    await worker.ok('history_append', { kind: 'observation', content: 'pgvector: 18 ms p95 at 1M vectors' });
    await worker.ok('final_answer_set', { content: 'Hosting: pgvector is cheapest where Postgres already runs.' });
    await worker.ok('agent_state_set', { state: 'finished' });

    ui = await startQuietUi(['--store', `sqlite://${db}`, '--port', '0']);
    context = await chromium.launchPersistentContext(join(dir, 'chromium-profile'), {
      executablePath: CHROMIUM,
      headless: true,
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
    mkdirSync(SHOTS, { recursive: true });
  });

  // a test that failed midway leaves its page open: closed here, so its errors (the board going down in a later test) are
  // not counted against the tests after it
  afterEach(async () => {
    for (const page of context?.pages() ?? []) await page.close();
  });
  afterAll(async () => {
    await context?.close();
    ui?.child.kill();
    await planner?.close();
    await worker?.close();
  });

  it('shows keys, a plan with steps, owners and blockers, and threads with lifecycle, budgets, final answer and history', async () => {
    const page = await board();
    const global = page.locator('.scope[data-scope="global"]');
    await expect(global.locator('tr[data-key="task"] .v').textContent()).resolves.toContain('Compare three vector databases');
    await expect(global.locator('tr[data-key="task"] .n').textContent()).resolves.toBe('1');
    await expect(global.locator('tr[data-key="task"] .by').textContent()).resolves.toBe('planner');
    await expect(global.locator('tr[data-key="lock:writer"] .expires').textContent()).resolves.toMatch(/expires in \d+m/);
    // A long value is folded, and unfolds.
    const config = global.locator('tr[data-key="config"] details.fold');
    expect(await config.getAttribute('open')).toBeNull();
    await config.locator('summary').click();
    await expect(config.locator('pre').textContent()).resolves.toContain('"temperature": 0.2');
    await expect(page.locator('.scope[data-scope="thread:research-root"] tr[data-key="draft"]').count()).resolves.toBe(1);

    const plan = page.locator(`.plan[data-plan="${planId}"]`);
    await expect(plan.locator('h3').textContent()).resolves.toBe('Vector database comparison');
    await expect(plan.locator('.step').count()).resolves.toBe(4);
    await expect(plan.locator('.step.st-completed .owner').textContent()).resolves.toBe('worker-1');
    await expect(plan.locator('.step.st-in_progress').textContent()).resolves.toContain('p95 over 10k queries');
    await expect(plan.locator('.step').nth(3).locator('.extra').textContent()).resolves.toBe('waits for s2, s3');
    await expect(plan.locator('.progress').textContent()).resolves.toBe('1/4');

    const root = page.locator('.thread[data-thread="research-root"]');
    // a thread that called within the last minute is working, whatever its lifecycle says; the lifecycle is shown too
    await expect(root.locator('.badge').textContent()).resolves.toBe('working');
    await expect(root.locator('.meta').first().textContent()).resolves.toContain('lifecycle running');
    await expect(root.locator('.meta').first().textContent()).resolves.toContain('agent planner');
    // The child's steps count against the parent: 4 + 3 of 20.
    await expect(root.locator('.budget').textContent()).resolves.toContain('7 / 20');
    await expect(root.locator('.event').first().textContent()).resolves.toContain('explore — confidence 0.4 · two benchmarks disagree');
    await expect(root.locator('.event').nth(1).textContent()).resolves.toContain('web_search');

    const child = page.locator('.thread[data-thread="worker-1-thread"]');
    await expect(child.locator('.badge').textContent()).resolves.toBe('done');
    await expect(child.locator('.budget').textContent()).resolves.toContain('3 / 5');
    await expect(child.locator('.final .text').textContent()).resolves.toBe('Hosting: pgvector is cheapest where Postgres already runs.');
    await expect(child.locator('.meta').first().textContent()).resolves.toContain('child of research-root');
    await page.close();
  });

  it('shows a write by another process within a second, without a reload', async () => {
    const page = await board();
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1));
    for (let i = 1; i <= 3; i++) {
      const started = Date.now();
      await worker.ok('state_set', { key: `live-${i}`, value: `written by another process (${i})` });
      await page.locator(`.scope[data-scope="global"] tr[data-key="live-${i}"]`).waitFor({ timeout: 1000 });
      expect(Date.now() - started).toBeLessThan(1000);
    }
    // Plan steps claimed and finished by agents appear live too.
    await planner.ok('plan_update', {
      planId,
      stepUpdates: [
        { id: 's2', status: 'completed' },
        { id: 's3', status: 'in_progress', owner: 'worker-1' },
      ],
    });
    // (a plan's change re-reads the board: on a loaded machine that can take past a second; the keys above are patched)
    await page
      .locator(`.plan[data-plan="${planId}"] .step.st-in_progress .owner`)
      .filter({ hasText: 'worker-1' })
      .waitFor({ timeout: 3000 });
    await expect(page.locator(`.plan[data-plan="${planId}"] .progress`).textContent()).resolves.toBe('2/4');
    await planner.ok('agent_state_set', { state: 'paused', reason: 'waiting for pricing data' });
    await page.locator('.thread[data-thread="research-root"] .badge.a-paused').waitFor({ timeout: 3000 });
    await expect(page.locator('.thread[data-thread="research-root"] .reason').textContent()).resolves.toContain('waiting for pricing data');
    await planner.ok('agent_state_set', { state: 'running' });
    // The timeline says who wrote what, newest first; a key's name shows that key's changes alone.
    const latest = page.locator('#timeline .change', { hasText: 'global/live-3' });
    await latest.waitFor({ timeout: 3000 });
    await expect(latest.textContent()).resolves.toMatch(/^r\d+global\/live-3 v1worker-1 · just now$/);
    await page.locator('.scope[data-scope="global"] tr[data-key="task"] button.key-name').click();
    await page.locator('#timeline-for', { hasText: 'of global/task' }).waitFor({ timeout: 2000 });
    await expect(page.locator('#timeline .change').allTextContents()).resolves.toEqual([
      expect.stringMatching(/^r\d+global\/task v1planner · /),
    ]);
    await page.locator('#timeline-all').click();
    await page.locator('#timeline .change', { hasText: 'global/live-3' }).waitFor({ timeout: 2000 });
    // Same document all along: nothing reloaded the page.
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1);
    await page.close();
  });

  it('shows the team: agents on the roster with status and the step each holds, and a message sent live', async () => {
    const page = await board();
    const { planId: review } = await planner.ok('plan_create', { title: 'Review queue', steps: ['Review the draft'] });
    await worker.ok('plan_claim', { planId: review });
    const team = page.getByRole('region', { name: /^Team/ });
    await team.waitFor({ state: 'visible', timeout: 2000 });
    const roster = team.getByRole('list', { name: /^Roster · \d+ agents$/ });
    const w = roster.locator('.agent[data-agent="worker-1"]');
    await w.locator('.holds', { hasText: 's1' }).waitFor({ timeout: 2000 });
    await expect(w.locator('.holds').textContent()).resolves.toBe(`holds s1 of ${review.length > 14 ? `${review.slice(0, 8)}…` : review}`);
    await expect(w.locator('.badge').textContent()).resolves.toBe('active');
    await expect(w.locator('.meta .mono').getAttribute('title')).resolves.toBe('worker-1-thread');
    await expect(roster.locator('.agent[data-agent="planner"] .badge.a-working').textContent()).resolves.toBe('active');
    // A message appears in the timeline within a second of message_send in another process, and the unread count with it.
    const messages = team.getByRole('list', { name: 'Messages, newest first' });
    // (timed from the send's reply: the send's own round trip is not the board's)
    await planner.ok('message_send', { to: 'worker-1', content: 'Stop: the pricing data changed.' });
    let started = Date.now();
    const sent = messages.locator('.message', { hasText: 'Stop: the pricing data changed.' });
    await sent.waitFor({ timeout: 1000 });
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(sent.locator('.meta').textContent()).resolves.toMatch(/^planner to worker-1/);
    await w.locator('.chip.unread', { hasText: '1 unread' }).waitFor({ timeout: 1000 });
    // One kept for a recipient not on the roster yet says so; the newest message comes first.
    await worker.ok('message_send', { to: 'reviewer', content: 'Please check s1 when you join.', waitForRecipient: true });
    started = Date.now();
    const kept = messages.locator('.message').first();
    await kept.filter({ hasText: 'Please check s1 when you join.' }).waitFor({ timeout: 1000 });
    expect(Date.now() - started).toBeLessThan(1000);
    await expect(kept.locator('.chip').textContent()).resolves.toBe('awaiting reviewer');
    await expect(kept.locator('.meta').textContent()).resolves.toMatch(/^worker-1 to reviewer/);
    await team.screenshot({ path: join(SHOTS, 'board-team.png') });
    await page.close();
  });

  it('shows when it is disconnected, reconnects by itself, and catches up', async () => {
    const page = await board(true);
    const port = new URL(ui.url).port;
    ui.child.kill();
    await page.locator('#conn[data-state="reconnecting"]').waitFor({ timeout: 5000 });
    await expect(page.locator('#conn-text').textContent()).resolves.toContain('reconnecting');
    await worker.ok('state_set', { key: 'while-away', value: 'written while the board was down' });
    ui = await startQuietUi(['--store', `sqlite://${db}`, '--port', port]);
    await page.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    await page.locator('.scope[data-scope="global"] tr[data-key="while-away"]').waitFor({ timeout: 2000 });
    await page.close();
  });

  it('refuses every method but GET and HEAD, and changes nothing', async () => {
    const read = async (): Promise<{ revision: number; keys: string[] }> => {
      const body = (await (await fetch(`${ui.url}board/api/board?ns=-`)).json()) as {
        revision: number;
        scopes: Array<{ keys: Array<{ key: string; version: number }> }>;
      };
      return { revision: body.revision, keys: body.scopes.flatMap((s) => s.keys.map((k) => `${k.key}@${k.version}`)) };
    };
    const before = await read();
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      for (const path of ['', 'board/api/board?ns=-', 'board/api/events?ns=-', 'board/board.js']) {
        const res = await fetch(`${ui.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ key: 'task', value: 'overwritten', ops: [{ op: 'delete', key: 'task' }] }),
        });
        expect(res.status, `${method} /${path}`).toBe(405);
        expect(res.headers.get('allow')).toBe('GET, HEAD');
      }
    }
    expect(await read()).toEqual(before);
  });

  it('makes no request off this machine and logs no console errors', () => {
    expect(requests.length).toBeGreaterThan(5);
    const origin = new URL(ui.url).origin;
    expect(requests.filter((u) => !u.startsWith(`${origin}/`))).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('fits a phone-width screen and saves screenshots in light and dark', async () => {
    for (const [width, height] of [
      [1280, 800],
      [390, 844],
    ]) {
      for (const colorScheme of ['light', 'dark'] as const) {
        const page = watchPage(await context.newPage());
        await page.setViewportSize({ width, height });
        await page.emulateMedia({ colorScheme });
        await page.goto(ui.url);
        await page.locator('#conn[data-state="live"]').waitFor();
        await page.locator('.plan').first().waitFor();
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect(overflow, `horizontal overflow at ${width}px`).toBeLessThanOrEqual(0);
        // text contrast at least 4.5:1 against what is behind it: badges, chips, notes, counts, times, meta lines
        const low = await page.evaluate(() => {
          const rgb = (css: string): number[] | undefined => {
            const m = /^rgba?\(([^)]+)\)$/.exec(css) ?? /^color\(srgb ([^)]+)\)$/.exec(css);
            if (!m) return undefined;
            const parts = m[1]
              .split(/[\s,/]+/)
              .filter(Boolean)
              .map(Number);
            const scale = css.startsWith('color(') ? 255 : 1;
            return [parts[0] * scale, parts[1] * scale, parts[2] * scale, parts[3] ?? 1];
          };
          const lum = ([r, g, b]: number[]): number => {
            const c = [r, g, b].map((v) => v / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
            return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
          };
          const background = (el: Element | null): number[] => {
            for (let e = el; e; e = e.parentElement) {
              const c = rgb(getComputedStyle(e).backgroundColor);
              if (c && c[3] > 0.5) return c;
            }
            return [255, 255, 255, 1];
          };
          const found: string[] = [];
          for (const el of document.querySelectorAll(
            '.badge, .chip, .note, .count, .seq, .rev, .when, .meta, .lease, .stat span, .event .kind',
          )) {
            const fg = rgb(getComputedStyle(el).color);
            if (!fg || !el.textContent?.trim()) continue;
            const [a, b] = [lum(fg), lum(background(el))];
            const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
            if (ratio < 4.5) found.push(`${el.className} "${el.textContent.trim().slice(0, 20)}" ${ratio.toFixed(2)}`);
          }
          return found;
        });
        expect(low, `contrast below 4.5:1 (${colorScheme})`).toEqual([]);
        await page.screenshot({ path: join(SHOTS, `board-${width}x${height}-${colorScheme}.png`) });
        await page.close();
      }
    }
    expect(problems).toEqual([]);
  });
});
