// The MCP capabilities the client making a request declared.
import type { ClientCapabilities, McpServer, ServerContext } from '@modelcontextprotocol/server';

/** The capabilities of the client making a request: its own `_meta` envelope (2026-07-28), else its `initialize`. */
export function clientCapabilities(server: McpServer, ctx: ServerContext | undefined): ClientCapabilities | undefined {
  const envelope = (ctx?.mcpReq as { envelope?: Record<string, unknown> } | undefined)?.envelope;
  const fromRequest = envelope?.['io.modelcontextprotocol/clientCapabilities'] as ClientCapabilities | undefined;
  return fromRequest ?? server.server.getClientCapabilities();
}
