// The HTTP floor: the SDK v2's own stateless Streamable HTTP handler (createMcpHandler, a server made per request, as
// ours does) with one no-op tool, on node:http through the SDK's Node adapter. Prints its URL on stderr.
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

const input = z.object({ key: z.string().optional(), value: z.unknown().optional() });
const output = z.object({ ok: z.boolean() });
const handler = toNodeHandler(
  createMcpHandler(() => {
    const server = new McpServer({ name: 'floor', version: '1.0.0' });
    server.registerTool('noop', { description: 'does nothing', inputSchema: input, outputSchema: output }, async () => ({
      content: [{ type: 'text', text: '{"ok":true}' }],
      structuredContent: { ok: true },
    }));
    return server;
  }),
);
const http = createServer((req, res) => void handler(req, res));
http.listen(0, '127.0.0.1', () => console.error(`floor on http://127.0.0.1:${http.address().port}/mcp`));
