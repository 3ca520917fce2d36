import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AppBridge, RESOURCE_MIME_TYPE, getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
import { Client, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { CLI, spawnAgent, type Spawned } from '../helpers.js';

// The board as an MCP App, in a host built from ext-apps' own host side: an AppBridge over a real MCP client of the
// built server (stdio, SQLite), relaying to the app's sandboxed iframe in Debian's Chromium. Agents write through
// other server processes.
const CHROMIUM = process.env.BLACKBOARD_CHROMIUM ?? '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
const SHOTS = join(import.meta.dirname, '..', '..', 'docs', 'screenshots');

// The host page: one sandboxed iframe (scripts only: an opaque origin, no network of its own); messages between the
// app and the bridge cross through two functions the test wires to the AppBridge.
const HOST_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>test host</title>
<style>html,body{margin:0;height:100%;background:#ddd}iframe{border:0;width:100%;height:100%;display:block;background:#fff}</style></head>
<body><iframe id="app" sandbox="allow-scripts" title="mcp-blackboard board"></iframe>
<script>
const frame = document.getElementById('app');
window.addEventListener('message', (e) => { if (e.source === frame.contentWindow) window.__toHost(JSON.stringify(e.data)); });
window.__toApp = (text) => frame.contentWindow.postMessage(JSON.parse(text), '*');
</script></body></html>`;

/** The bridge's transport: JSON-RPC messages to and from the app's iframe, through the page. */
function pageTransport(page: Page) {
  const transport = {
    onmessage: undefined as ((message: unknown) => void) | undefined,
    onclose: undefined as (() => void) | undefined,
    onerror: undefined as ((error: Error) => void) | undefined,
    async start() {
      await page.exposeFunction('__toHost', (text: string) => transport.onmessage?.(JSON.parse(text)));
    },
    async send(message: unknown) {
      await page.evaluate((text) => (window as unknown as { __toApp(t: string): void }).__toApp(text), JSON.stringify(message));
    },
    async close() {
      transport.onclose?.();
    },
  };
  return transport;
}

/**
 * Opens the host page, connects an AppBridge to `host` through it, loads the app's resource in its iframe and hands it
 * board_show's result, as a host does. Records the tools the app calls, the page's requests and console problems.
 */
async function showApp(browser: Browser, host: Client) {
  const { tools } = await host.listTools();
  const uri = getToolUiResourceUri(tools.find((t) => t.name === 'board_show')!)!;
  const resource = await host.readResource({ uri });
  expect(resource.contents[0].mimeType).toBe(RESOURCE_MIME_TYPE);
  const html = (resource.contents[0] as { text: string }).text;

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const requests: string[] = [];
  const problems: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.setContent(HOST_PAGE);

  // every request the app makes goes through the bridge to the server: record the tools it calls
  const called: string[] = [];
  const bridge = new AppBridge(host, { name: 'test-host', version: '1.0.0' }, { serverTools: {}, serverResources: {} });
  const initialized = new Promise<void>((resolve) => (bridge.oninitialized = () => resolve()));
  await bridge.connect(pageTransport(page) as never);
  const forward = bridge.oncalltool!;
  bridge.oncalltool = (params, extra) => {
    called.push(params.name);
    return forward(params, extra);
  };
  await page.evaluate((doc) => ((document.getElementById('app') as HTMLIFrameElement).srcdoc = doc), html);
  await initialized;
  await bridge.sendToolInput({ arguments: {} });
  await bridge.sendToolResult((await host.callTool({ name: 'board_show', arguments: {} })) as CallToolResult);
  return { page, bridge, called, requests, problems };
}

/** A real MCP client of the built server that declares it renders MCP Apps (the host's side). */
async function appHost(args: string[]): Promise<Client> {
  const host = new Client(
    { name: 'test-host', version: '1.0.0' },
    { capabilities: { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [RESOURCE_MIME_TYPE] } } } },
  );
  await host.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, ...args], stderr: 'pipe' }));
  return host;
}

describe.skipIf(!haveChromium)('the board as an MCP App', () => {
  let db: string;
  let planner: Spawned;
  let worker: Spawned;
  let writer: Spawned;
  let browser: Browser;
  let host: Client;
  let planId: string;

  beforeAll(async () => {
    db = join(tempDir(), 'app.db');
    const store = ['--store', `sqlite://${db}`, '--max-iterations', '8'];
    planner = await spawnAgent([...store, '--agent', 'planner', '--thread', 'planner-thread']);
    worker = await spawnAgent([...store, '--agent', 'worker-a', '--thread', 'worker-a-thread']);
    writer = await spawnAgent([...store, '--agent', 'analyst', '--thread', 'analyst-thread']);
    await planner.ok('state_set', { key: 'task', value: 'Summarise the incident report' });
    ({ planId } = await planner.ok('plan_create', {
      title: 'Incident review',
      steps: ['Collect logs', 'Write timeline', 'Draft summary'],
    }));
    await worker.ok('plan_claim', { planId });
    await worker.ok('budget_step', {});
    await worker.ok('budget_step', {});
    await writer.ok('final_answer_set', { content: 'Root cause: an expired certificate on the gateway.' });
    // the host: a real MCP client that declares it renders MCP Apps, of a server showing the follow profile
    host = await appHost(['--store', `sqlite://${db}`, '--tools', 'follow', '--agent', 'person']);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await host?.close();
    for (const agent of [planner, worker, writer]) await agent?.close();
  });

  it('renders board_show inside the host and follows new writes through board_wait, never writing, with no network', async () => {
    const { tools } = await host.listTools();
    const show = tools.find((t) => t.name === 'board_show')!;
    expect(getToolUiResourceUri(show)).toMatch(/^ui:\/\//);
    const wait = tools.find((t) => t.name === 'board_wait');
    expect(wait?._meta).toMatchObject({ ui: { visibility: ['app'] } });
    const { page, bridge, called, requests, problems } = await showApp(browser, host);

    const app = page.frameLocator('#app');
    await app.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    // a key, a plan with a claimed step and its holder, a budget, a final answer
    await expect(app.locator('tr[data-key="task"] .v').textContent()).resolves.toContain('Summarise the incident report');
    const plan = app.locator(`.plan[data-plan="${planId}"]`);
    await expect(plan.locator('h3').textContent()).resolves.toBe('Incident review');
    const held = plan.locator('.step[data-step="s1"]');
    await expect(held.getAttribute('class')).resolves.toContain('st-in_progress');
    await expect(held.locator('.chip.owner').textContent()).resolves.toBe('worker-a');
    await expect(held.locator('.lease').textContent()).resolves.toMatch(/^lease ends in \d+m$/);
    const workerCard = app.locator('.thread[data-thread="worker-a-thread"]');
    await expect(workerCard.locator('.badge').textContent()).resolves.toBe('working');
    await expect(workerCard.locator('.budget .label').textContent()).resolves.toBe('iterations2 / 8');
    await expect(workerCard.locator('[role="meter"]').getAttribute('aria-label')).resolves.toBe('budget iterations: 2 of 8');
    const analyst = app.locator('.thread[data-thread="analyst-thread"]');
    await expect(analyst.locator('.final .text').textContent()).resolves.toBe('Root cause: an expired certificate on the gateway.');
    await expect(analyst.locator('.badge').textContent()).resolves.toBe('done');

    // the team: who is on the roster, its status and the step it holds
    const team = app.getByRole('region', { name: /^Team/ });
    const rosterWorker = team.locator('.agent[data-agent="worker-a"]');
    await expect(rosterWorker.locator('.badge').textContent()).resolves.toBe('active');
    await expect(rosterWorker.locator('.holds b').textContent()).resolves.toBe('s1');

    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'board-app-1280.png') });

    // a write by another process appears within 2 s
    const started = Date.now();
    await writer.ok('state_set', { key: 'status', value: 'timeline drafted' });
    await app.locator('tr[data-key="status"]').waitFor({ timeout: 2000 });
    expect(Date.now() - started).toBeLessThan(2000);
    await worker.ok('plan_step', { planId, stepId: 's1', status: 'completed' });
    await plan.locator('.step[data-step="s1"].st-completed').waitFor({ timeout: 2000 });
    // a message by another process appears in the team's timeline within 2 s too
    const sentAt = Date.now();
    await planner.ok('message_send', { to: 'worker-a', content: 'Draft the summary next.' });
    await team.locator('.message', { hasText: 'Draft the summary next.' }).waitFor({ timeout: 2000 });
    expect(Date.now() - sentAt).toBeLessThan(2000);
    await expect(team.locator('.message .meta').first().textContent()).resolves.toMatch(/^planner to worker-a/);
    // A plan too large for a tool reply: the app shows the steps that fit, its true progress and how many it left out.
    const { planId: bigPlan } = await planner.ok('plan_create', {
      title: 'Audit every service',
      steps: Array.from({ length: 200 }, (_, i) => ({
        content: `audit service ${i} ${'x'.repeat(300)}`,
        ...(i < 70 ? { status: 'completed' } : {}),
      })),
    });
    const big = app.locator(`.plan[data-plan="${bigPlan}"]`);
    await big.waitFor({ timeout: 2000 });
    await expect(big.locator('.progress').textContent()).resolves.toBe('70/200');
    const shownSteps = await big.locator('.step').count();
    expect(shownSteps).toBeGreaterThan(0);
    expect(shownSteps).toBeLessThan(200);
    await expect(big.locator('p.note').textContent()).resolves.toBe(
      `${200 - shownSteps} more steps not shown here; plan_get lists them all.`,
    );

    await page.setViewportSize({ width: 420, height: 900 });
    await page.waitForTimeout(200);
    const width = await app.locator('body').evaluate((b) => b.scrollWidth);
    expect(width).toBeLessThanOrEqual(420);
    await page.screenshot({ path: join(SHOTS, 'board-app-420.png'), fullPage: true });

    // the host's theme wins over the system's
    bridge.setHostContext({ theme: 'dark' });
    await app.locator('html[data-theme="dark"]').waitFor({ timeout: 2000 });
    await expect(app.locator('body').evaluate((b) => getComputedStyle(b).backgroundColor)).resolves.toBe('rgb(15, 19, 24)');

    // read-only tools only, no request outside the host page, a clean console
    expect(called.length).toBeGreaterThan(0);
    expect(new Set(called)).toEqual(new Set(['board_wait']));
    expect(requests).toEqual([]);
    expect(problems).toEqual([]);
    await bridge.teardownResource({}).catch(() => {});
    await page.close();
  }, 60_000);
});

describe.skipIf(!haveChromium)('a lease in the MCP App', () => {
  let worker: Spawned | undefined;
  let host: Client | undefined;
  let browser: Browser | undefined;

  afterAll(async () => {
    await browser?.close();
    await host?.close();
    await worker?.close();
  });

  it("shows a stopped worker's claim lapsed soon after its lease ends, not when the app's wait for a change times out", async () => {
    // a 3 s lease: the claim lapses about 3 s after the worker's last call; the app's wait for a change lasts 25 s
    const store = ['--store', `sqlite://${join(tempDir(), 'lease.db')}`, '--claim-lease', '3'];
    worker = await spawnAgent([...store, '--agent', 'worker-b', '--thread', 'worker-b-thread']);
    host = await appHost([...store, '--tools', 'follow', '--agent', 'person']);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const { planId } = await worker.ok('plan_create', { title: 'Lease plan', steps: ['Collect logs'] });
    const { page, problems } = await showApp(browser, host);
    const app = page.frameLocator('#app');
    await app.locator('#conn[data-state="live"]').waitFor({ timeout: 10_000 });
    const step = app.locator(`.plan[data-plan="${planId}"] .step[data-step="s1"]`);
    await app.locator(`.plan[data-plan="${planId}"] .step[data-step="s1"].st-pending`).waitFor({ timeout: 5000 });

    const claimedAt = Date.now();
    await worker.ok('plan_claim', { planId, stepId: 's1' });
    await step.locator('.claim').waitFor({ timeout: 5000 });
    // the worker stops: nothing is written when its claim lapses
    await worker.close();
    worker = undefined;
    // the step is back in the queue within the lease and 8 s (it took the 25 s wait's timeout before)
    await app
      .locator(`.plan[data-plan="${planId}"] .step[data-step="s1"].st-pending`)
      .waitFor({ timeout: claimedAt + 11_000 - Date.now() });
    expect(await step.locator('.claim').count()).toBe(0);
    await expect(step.locator('.chip.attempts').textContent()).resolves.toBe('1 lapsed claim');
    expect(problems).toEqual([]);
    await page.close();
  }, 30_000);
});
