import { Client, InMemoryTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config.js';
import { createServer } from '../../src/server.js';
import type { VersionedStore } from '../../src/store/versioned-store.js';
import { Agent, type Era, connect, memoryStore } from '../helpers.js';

const APPS = { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } };
const URI = 'ui://mcp-blackboard/board.html';
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A client that declares (or not) that it renders MCP Apps, over a server with `tools`. */
async function client(era: Era, apps: boolean, store: VersionedStore, tools = ['follow']): Promise<Agent & { client: Client }> {
  const bb = await createServer(defaultConfig({ tools }), store, { agent: 'viewer' });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const c = new Client(
    { name: apps ? 'apps-host' : 'plain-host', version: '1.0.0' },
    {
      ...(era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
      capabilities: apps ? { extensions: APPS } : {},
    },
  );
  serveStdio(() => bb.server, { transport: serverSide });
  await c.connect(clientSide);
  closers.push(
    () => c.close(),
    () => bb.close(),
  );
  return new Agent(c) as Agent & { client: Client };
}

/** A call that must succeed: its structured content (the text is a summary, not the JSON). */
// biome-ignore lint/suspicious/noExplicitAny: tests read results field by field
async function structured(agent: Agent, name: string, args: Record<string, unknown>): Promise<Record<string, any>> {
  const result = await agent.raw(name, args);
  if (result.isError) throw new Error(`${name} failed: ${(result.content[0] as { text: string }).text}`);
  return result.structuredContent as Record<string, unknown>;
}

describe.each(['modern', 'legacy'] as const)('board_show and the board app (%s)', (era) => {
  it('lists board_show with its app; board_wait only for a client that renders apps, for the app alone', async () => {
    const store = memoryStore();
    const plain = await client(era, false, store);
    const apps = await client(era, true, store);
    const plainTools = (await plain.client.listTools()).tools;
    const show = plainTools.find((t) => t.name === 'board_show');
    expect(show?._meta).toMatchObject({ ui: { resourceUri: URI }, 'ui/resourceUri': URI });
    expect(show?.annotations?.readOnlyHint).toBe(true);
    expect(plainTools.some((t) => t.name === 'board_wait')).toBe(false);
    const notHere = await plain.err('board_wait', { afterRevision: 0 });
    expect(notHere).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/: it is only for clients that render MCP Apps\./),
    });
    const wait = (await apps.client.listTools()).tools.find((t) => t.name === 'board_wait');
    expect(wait?._meta).toMatchObject({ ui: { resourceUri: URI, visibility: ['app'] } });
    expect(wait?.annotations?.readOnlyHint).toBe(true);
    // the default profile has neither
    const agent = await client(era, true, store, ['agent']);
    expect((await agent.client.listTools()).tools.filter((t) => t.name.startsWith('board_'))).toEqual([]);
    const operator = await client(era, true, store, ['operator']);
    expect((await operator.client.listTools()).tools.map((t) => t.name)).toEqual(expect.arrayContaining(['board_show', 'board_wait']));
  });

  it('serves the app as one self-contained HTML resource', async () => {
    const apps = await client(era, true, memoryStore());
    const { resources } = await apps.client.listResources();
    expect(resources.find((r) => r.uri === URI)?.mimeType).toBe('text/html;profile=mcp-app');
    const read = await apps.client.readResource({ uri: URI });
    expect(read.contents).toHaveLength(1);
    const html = (read.contents[0] as { text: string; mimeType: string }).text;
    expect(read.contents[0].mimeType).toBe('text/html;profile=mcp-app');
    expect(html.startsWith('<!doctype html>')).toBe(true);
    // nothing loaded from elsewhere: no src/href to a file, no URL the page fetches
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
    expect(html).not.toMatch(/\bfetch\(|new WebSocket|EventSource\(/);
  });

  it('returns the board as structured content and a compact text summary; board_wait waits for the next change', async () => {
    const store = memoryStore();
    const writer = await connect({ store, era, identity: { agent: 'w1', thread: 'worker-1' } });
    closers.push(() => writer.close());
    await writer.ok('state_set', { key: 'greeting', value: 'hello' });
    const { planId } = await writer.ok('plan_create', { title: 'Ship it', steps: ['build', 'test'] });
    await writer.ok('plan_claim', { planId });
    await writer.ok('final_answer_set', { content: 'all done' });
    const plain = await client(era, false, store);
    const shown = (await plain.raw('board_show', {})) as CallToolResult;
    const text = (shown.content[0] as { text: string }).text;
    expect(text).toMatch(/Board of namespace \(default\) at revision \d+/);
    expect(text).toContain('worker-1 [done] agent w1');
    expect(text).toMatch(/Ship it \(\S+\) active 0\/2 · s1 held by w1/);
    expect(text).toContain('global/greeting = "hello"');
    // biome-ignore lint/suspicious/noExplicitAny: tests read results field by field
    const board = shown.structuredContent as Record<string, any>;
    expect(board.waitTool).toBeUndefined(); // a client without apps gets no live-update tool
    expect(board.plans[0].steps[0].claim.thread).toBe('worker-1');
    expect(board.threads.find((t: { thread: string }) => t.thread === 'worker-1').finalAnswer.content).toBe('all done');

    const apps = await client(era, true, store);
    const first = await structured(apps, 'board_show', { section: 'keys' });
    expect(first.waitTool).toBe('board_wait');
    expect(first.sections).toEqual(['scopes']);
    expect(first.plans).toBeUndefined();
    const idle = await structured(apps, 'board_wait', { afterRevision: first.revision, waitMs: 150 });
    expect(idle.timedOut).toBe(true);
    const started = Date.now();
    const next = structured(apps, 'board_wait', { afterRevision: first.revision, waitMs: 5000, section: 'keys' });
    setTimeout(() => void writer.ok('state_set', { key: 'greeting', value: 'again' }), 100);
    const changed = await next;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(changed.timedOut).toBeUndefined();
    expect(changed.revision).toBeGreaterThan(first.revision);
    expect(changed.scopes[0].keys[0].value).toBe('"again"');
    // it never writes: the revision is where the writer left it
    expect(await store.revision()).toBe(changed.revision);
    expect((await apps.err('board_wait', { afterRevision: changed.revision + 100 })).code).toBe('INVALID_ARGUMENT');
    // a server with board_wait alone names no tool it lacks
    const alone = await client(era, true, store, ['board_wait']);
    const ahead = await alone.err('board_wait', { afterRevision: changed.revision + 100 });
    expect(ahead.message).toMatch(/^afterRevision \d+ is ahead of this store's revision \d+: pass back/);
    expect(ahead.message).not.toMatch(/board_show/);
  });
});
