import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { createBoardHandler } from '../../src/ui/handler.js';
import { tempDir } from '../contract/backends.js';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

// A lease that ends on the board in a real browser (Debian's Chromium driven by playwright-core): nothing is written
// when a holder stops, so the page itself must look again when a lease it shows ends.
const CHROMIUM = process.env.BLACKBOARD_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`ui-lease.test.ts: skipped, no Chromium at ${CHROMIUM}.`);

const connect = agentsClosedAfterEach();
let context: BrowserContext | undefined;
let server: Server | undefined;
let close: (() => void) | undefined;
afterEach(async () => {
  await context?.close();
  close?.();
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  context = server = close = undefined;
});

describe.skipIf(!haveChromium)('a lease on the board in a browser', () => {
  it('shows a claim lapsed once its holder stops, while others keep calling', async () => {
    const store = memoryStore();
    // a 3 s lease: the worker's claim lapses 3 s after its last call
    const config = { namespace: 'team', claimLeaseSeconds: 3 };
    const lead = await connect({ store, config: { ...config, agent: 'lead' } });
    const worker = await connect({ store, config: { ...config, agent: 'w1' } });
    const { planId } = await lead.ok('plan_create', { title: 'Lease plan', steps: ['a'] });
    const board = createBoardHandler({ store, namespace: 'team' });
    close = board.close;
    server = createServer((req, res) => void board(req, res));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    context = await chromium.launchPersistentContext(join(tempDir(), 'chromium-profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await page.locator('#conn[data-state="live"]').waitFor();
    await worker.ok('plan_claim', { planId, stepId: 's1' });
    const claim = page.locator('.plan', { hasText: 'Lease plan' }).locator('.claim');
    await claim.waitFor({ timeout: 5000 });
    expect(await claim.getAttribute('class')).toBe('claim');
    // the worker stops; the lead keeps calling (a sign of life a second) past the end of the worker's lease
    const stop = Date.now() + 7000;
    while (Date.now() < stop && (await claim.count()) > 0) {
      await lead.ok('state_get', { key: 'x' });
      await page.waitForTimeout(1100);
    }
    // the step went back to the queue: no claim is shown
    expect(await claim.count()).toBe(0);
  });
});
