// The floor's no-op tool (floor-server.mjs) served the way mcp-blackboard serves stdio: the SDK's connection entry
// over this server's line transport. What a call costs here and not on the floor is the transport, not the tools.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';
import { LimitedStdioTransport } from '../dist/transports/stdio.js';

serveStdio(
  () => {
    const server = new McpServer({ name: 'floor', version: '1.0.0' });
    server.registerTool(
      'noop',
      { description: 'does nothing', inputSchema: z.object({ key: z.string().optional() }), outputSchema: z.object({ ok: z.boolean() }) },
      async () => ({ content: [{ type: 'text', text: '{"ok":true}' }], structuredContent: { ok: true } }),
    );
    return server;
  },
  { transport: new LimitedStdioTransport(10 * 1024 * 1024) },
);
