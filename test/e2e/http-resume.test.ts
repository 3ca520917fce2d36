import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { CallToolResult } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, httpAgent, initializeBody, MCP_HEADERS, startHttp, type HttpAgent, type Served } from './http-helpers.js';

// A long watch over SSE whose connection drops: the result, written while the client was away, is not lost.
const TOKEN = 'resume-token-0123456789';
let s: Served;
let writer: HttpAgent;
beforeAll(async () => {
  s = await startHttp({ token: TOKEN });
  writer = await httpAgent(`${s.base}/mcp`, bearer(TOKEN));
});
afterAll(async () => {
  await writer?.close();
  await s?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads SSE events from a response until `until` says stop; returns them. */
async function readEvents(
  res: Response,
  until: (events: { id?: string; data: string }[]) => boolean,
): Promise<{ id?: string; data: string }[]> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: { id?: string; data: string }[] = [];
  let buffer = '';
  while (!until(events)) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const id = /^id: ?(.*)$/m.exec(block)?.[1];
      const data = [...block.matchAll(/^data: ?(.*)$/gm)].map((m) => m[1]).join('\n');
      if (id !== undefined || data) events.push({ id, data });
    }
  }
  await reader.cancel().catch(() => {});
  return events;
}

describe('resumable SSE streams', () => {
  it('Last-Event-ID after a dropped watch stream delivers its progress and its result', async () => {
    const url = `${s.base}/mcp`;
    const init = await fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...bearer(TOKEN) }, body: initializeBody() });
    const sessionId = init.headers.get('mcp-session-id')!;
    await init.text();
    const headers = { ...MCP_HEADERS, ...bearer(TOKEN), 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' };
    await (
      await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
    ).text();

    const dropped = new AbortController();
    const call = { name: 'watch', arguments: { key: 'resume-me', waitMs: 30_000 }, _meta: { progressToken: 'p1' } };
    const stream = await fetch(url, {
      method: 'POST',
      headers,
      signal: dropped.signal,
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: call }),
    });
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    // the priming event and one progress notification, each with an id; then the connection drops
    const seen = await readEvents(stream, (events) => events.some((e) => e.data.includes('notifications/progress')));
    expect(seen.every((e) => e.id)).toBe(true);
    const lastEventId = seen.at(-1)!.id!;
    dropped.abort();
    await sleep(300);

    await writer.ok('state_set', { key: 'resume-me', value: 'written while the client was away' });
    await sleep(300);

    const resumed = await fetch(url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream', 'last-event-id': lastEventId } });
    expect(resumed.status).toBe(200);
    const replayed = await readEvents(resumed, (events) => events.some((e) => e.data.includes('"id":7')));
    const response = JSON.parse(replayed.find((e) => e.data.includes('"id":7'))!.data) as { result: CallToolResult };
    expect(response.result.structuredContent).toMatchObject({ found: true, value: 'written while the client was away', timedOut: false });
    expect(replayed.every((e) => e.id && e.id !== lastEventId)).toBe(true); // nothing seen before is sent again

    // another session cannot replay this one's events
    const other = await fetch(url, { method: 'POST', headers: { ...MCP_HEADERS, ...bearer(TOKEN) }, body: initializeBody() });
    const otherId = other.headers.get('mcp-session-id')!;
    await other.text();
    const stolen = await fetch(url, {
      method: 'GET',
      headers: { ...headers, 'mcp-session-id': otherId, accept: 'text/event-stream', 'last-event-id': lastEventId },
    });
    expect(stolen.status).toBe(400);
    await stolen.text();
  });

  it('an SDK client whose watch stream drops reconnects by itself and gets the result', async () => {
    let drop: (() => void) | undefined;
    const resumedWith: string[] = [];
    // The network under the client: the watch's POST stream is cut on demand, the rest passes through.
    const flaky: typeof fetch = async (input, init) => {
      const lastEventId = new Headers(init?.headers).get('last-event-id');
      if (lastEventId) resumedWith.push(lastEventId);
      if (init?.method === 'POST' && typeof init.body === 'string' && init.body.includes('"watch"')) {
        const cut = new AbortController();
        init.signal?.addEventListener('abort', () => cut.abort());
        drop = () => cut.abort();
        return fetch(input, { ...init, signal: cut.signal });
      }
      return fetch(input, init);
    };
    const transport = new StreamableHTTPClientTransport(new URL(`${s.base}/mcp`), {
      requestInit: { headers: bearer(TOKEN) },
      fetch: flaky,
      reconnectionOptions: { initialReconnectionDelay: 500, maxReconnectionDelay: 2000, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
    });
    const client = new Client({ name: 'flaky', version: '1' });
    await client.connect(transport);
    try {
      const tokens: string[] = [];
      const result = client.callTool(
        { name: 'watch', arguments: { key: 'sdk-resume', waitMs: 30_000 } },
        {
          onresumptiontoken: (t) => tokens.push(t),
          timeout: 30_000,
        },
      );
      while (tokens.length === 0) await sleep(20);
      drop!();
      await sleep(100);
      await writer.ok('state_set', { key: 'sdk-resume', value: 42 });
      expect(((await result) as CallToolResult).structuredContent).toMatchObject({ value: 42, timedOut: false });
      expect(resumedWith).toContain(tokens[0]);
    } finally {
      await client.close();
    }
  });
});
