// The protocol floor: an @modelcontextprotocol/server (SDK v2) server with one no-op tool over stdio. Whatever a call to it
// costs is the price of MCP itself (JSON-RPC framing, stdio, the SDK on both sides), not of any state server.
import { McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const server = new McpServer({ name: 'floor', version: '1.0.0' });
server.registerTool(
  'noop',
  { description: 'does nothing', inputSchema: z.object({ key: z.string().optional() }), outputSchema: z.object({ ok: z.boolean() }) },
  async () => ({ content: [{ type: 'text', text: '{"ok":true}' }], structuredContent: { ok: true } }),
);
await server.connect(new StdioServerTransport());
