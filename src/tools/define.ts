import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type * as z from 'zod';
import { BlackboardError, storeUnavailable } from '../errors.js';

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Where tools are registered: the MCP server, and the namespace that prefixes every tool name. */
export interface ToolHost {
  server: McpServer;
  namespace?: string;
  /** progress notification period for blocking tools */
  progressIntervalMs: number;
  /** names registered so far, in order */
  registered: string[];
  /** a read-only client: every tool not annotated `readOnlyHint` fails with FORBIDDEN and changes nothing */
  readOnly?: boolean;
  /** runs before every tool not annotated `readOnlyHint` (the session records its thread on its first write) */
  beforeWrite?: () => Promise<void>;
}

export interface ToolSpec<I extends z.ZodObject, O extends z.ZodObject> {
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
}

/** `NS_name` under `--namespace NS`, else `name`. */
export const toolName = (host: ToolHost, name: string): string => (host.namespace ? `${host.namespace}_${name}` : name);

/** A success: `structuredContent` plus the same JSON as text. */
export function ok(data: object): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data as Record<string, unknown> };
}

/** A failure: `isError`, no `structuredContent`, one text content holding `{"error": {code, message, details?}}`. */
export function fail(error: BlackboardError): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(error.toJSON()) }] };
}

/**
 * Registers one tool. The handler returns plain data or throws a {@link BlackboardError}; this turns either into the
 * result shape of SPEC.md. Anything else thrown is reported as STORE_UNAVAILABLE, never as a success.
 */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  host: ToolHost,
  name: string,
  spec: ToolSpec<I, O>,
  handler: (args: z.infer<I>, extra: Extra) => Promise<z.infer<O>>,
): void {
  host.registered.push(toolName(host, name));
  host.server.registerTool(
    toolName(host, name),
    {
      title: spec.title,
      description: spec.description,
      inputSchema: spec.input,
      outputSchema: spec.output,
      annotations: { openWorldHint: false, ...spec.annotations },
    },
    (async (args: z.infer<I>, extra: Extra): Promise<CallToolResult> => {
      const writes = spec.annotations.readOnlyHint !== true;
      if (writes && host.readOnly) {
        return fail(
          new BlackboardError(
            'FORBIDDEN',
            `${toolName(host, name)} changes the board, and this client has read-only access: nothing was changed. Use the read tools, or ask the operator for readwrite access.`,
          ),
        );
      }
      try {
        if (writes) await host.beforeWrite?.();
        return ok(await handler(args, extra));
      } catch (error) {
        if (!(error instanceof BlackboardError) && !extra.signal.aborted) console.error(`[mcp-blackboard] ${name} failed:`, error);
        return fail(error instanceof BlackboardError ? error : storeUnavailable(error, `complete ${name}`));
      }
    }) as never,
  );
}

/**
 * Sends `notifications/progress` every `intervalMs` while `work` runs, when the request carries a progress token,
 * so a client that resets its timeout on progress keeps waiting for a long blocking call.
 */
export async function withProgress<T>(extra: Extra, intervalMs: number, message: string, work: () => Promise<T>): Promise<T> {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return work();
  const started = Date.now();
  let ticks = 0;
  const timer = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    void extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress: ++ticks, message: `${message} (${seconds}s)` },
      })
      .catch(() => {});
  }, intervalMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
