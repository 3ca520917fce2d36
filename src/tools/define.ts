// How tools are declared and registered: the tool host, results, progress.
import type {
  CallToolResult,
  LoggingLevel,
  McpServer,
  RequestMeta,
  ServerContext,
  ServerNotification,
  Tool,
  ToolAnnotations,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { CallOptions } from '../context.js';
import { BlackboardError, storeUnavailable } from '../errors.js';
import { renderMentions } from '../tool-mentions.js';
import { argumentError, closestTool, prepareArgs } from './argument-errors.js';

/** What a tool handler gets besides its arguments: the request's abort signal, `_meta`, and a way to notify. */
export interface Extra {
  signal: AbortSignal;
  _meta?: RequestMeta;
  sendNotification(notification: ServerNotification): Promise<void>;
  /** Sends a log message related to this request (dropped below the level the client asked for). */
  log(level: LoggingLevel, data: unknown, logger?: string): Promise<void>;
  /** the SDK's request context */
  ctx?: ServerContext;
}

/** The {@link Extra} of one SDK request context. */
export const extraOf = (ctx: ServerContext): Extra => ({
  signal: ctx.mcpReq.signal,
  _meta: ctx.mcpReq._meta,
  sendNotification: (notification) => ctx.mcpReq.notify(notification),
  log: (level, data, logger) => ctx.mcpReq.log(level, data, logger),
  ctx,
});

export interface ToolSpec<I extends z.ZodObject, O extends z.ZodObject> {
  title: string;
  /** when to use the tool and what comes back; other tools are mentioned as `{tool:NAME}` */
  description: string;
  /** the strict argument schema: advertised in tools/list, and checked before the handler runs */
  input: I;
  output: O;
  annotations: ToolAnnotations;
}

interface Declared {
  name: string;
  spec: ToolSpec<z.ZodObject, z.ZodObject>;
  handler: (args: never, extra: Extra, call: CallOptions) => Promise<object>;
}

/**
 * The tools of one server. Families declare their tools here first; {@link ToolHost.install} then registers them on
 * the MCP server once the whole set is known, so every text can name exactly the tools that exist (with the
 * namespace prefix) and leave out the ones `--tools` did not enable.
 */
export class ToolHost {
  private readonly declared: Declared[] = [];
  private mcp?: McpServer;

  constructor(
    /** `--namespace`: prefixes every tool name */
    readonly namespace: string | undefined,
    /** progress notification period for blocking tools */
    readonly progressIntervalMs: number,
    private readonly access: {
      /** a read-only client: every tool not annotated `readOnlyHint` fails with FORBIDDEN and changes nothing */
      readOnly?: boolean;
      /** runs before every tool not annotated `readOnlyHint` (the session records its thread on its first write) */
      beforeWrite?: () => Promise<void>;
      /** runs after every call that succeeded, reads included (the caller's sign of life); returns the reply's `_meta` */
      afterCall?: () => Promise<Record<string, unknown> | undefined>;
      /** the tools of the identity a request names in its `_meta`, when it is not this host's */
      route?: (extra: Extra) => Promise<ToolHost | undefined>;
    } = {},
    /** which declared tools to register (`--tools`, `--read-only`); default all */
    private readonly selected: (name: string, annotations: ToolAnnotations) => boolean = () => true,
  ) {}

  /** The registered names, in declaration order. */
  get names(): string[] {
    return this.declared.map((tool) => this.nameOf(tool.name));
  }

  /** `NS_name` under `--namespace NS`, else `name`. */
  nameOf(name: string): string {
    return this.namespace ? `${this.namespace}_${name}` : name;
  }

  /** Whether this server has the tool (by base name). */
  has(name: string): boolean {
    return this.declared.some((tool) => tool.name === name);
  }

  /** A text with its `{tool:NAME}` mentions named as registered, and sentences about absent tools left out. */
  render(text: string): string {
    return renderMentions(text, (name) => (this.has(name) ? this.nameOf(name) : undefined));
  }

  /** A JSON schema with the tool mentions of its descriptions rendered. */
  private renderSchema(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((item) => this.renderSchema(item));
    if (node === null || typeof node !== 'object') return node;
    return Object.fromEntries(
      Object.entries(node).map(([k, v]) => [k, k === 'description' && typeof v === 'string' ? this.render(v) : this.renderSchema(v)]),
    );
  }

  /** The MCP server, once installed (handlers run only after that). */
  get server(): McpServer {
    if (!this.mcp) throw new Error('tools are not installed on a server yet');
    return this.mcp;
  }

  declare(tool: Declared): void {
    if (this.has(tool.name)) throw new Error(`tool ${tool.name} declared twice`);
    if (this.selected(tool.name, tool.spec.annotations)) this.declared.push(tool);
  }

  /**
   * Checks arguments against a declared tool's strict schema, as a call does: the parsed arguments, and whether the
   * tool writes (not annotated `readOnlyHint`). Throws INVALID_ARGUMENT naming the argument. For callers that are
   * not MCP clients (the library), so that they get the same argument rules.
   */
  parseArguments(name: string, args: unknown): { args: unknown; writes: boolean } {
    const tool = this.declared.find((t) => t.name === name);
    if (!tool) throw new Error(`no tool ${name} is declared`);
    const given = prepareArgs(tool.spec.input, args ?? {});
    const parsed = tool.spec.input.safeParse(given);
    if (!parsed.success) throw argumentError(parsed.error, tool.spec.input, given);
    return { args: parsed.data, writes: tool.spec.annotations.readOnlyHint !== true };
  }

  /** The tools as tools/list shows them: rendered descriptions, exact JSON schemas without `$schema`. */
  listing(): Tool[] {
    return this.declared.map(({ name, spec }) => ({
      name: this.nameOf(name),
      title: spec.title,
      description: this.render(spec.description),
      inputSchema: this.renderSchema(jsonSchema(spec.input, 'input')) as Tool['inputSchema'],
      outputSchema: this.renderSchema(jsonSchema(spec.output, 'output')) as Tool['outputSchema'],
      annotations: compactAnnotations(spec.annotations),
    }));
  }

  /**
   * Registers every declared tool on `server`. The SDK is given a permissive argument schema, so that arguments
   * that break the strict one reach {@link run} and come back in the error envelope (`INVALID_ARGUMENT` with
   * `details.path`) instead of as the SDK's plain validation text; tools/list still advertises the strict schemas.
   */
  install(server: McpServer, only?: (name: string) => boolean): void {
    this.mcp = server;
    // The list is fixed for the life of the server.
    server.server.registerCapabilities({ tools: { listChanged: false } });
    for (const tool of this.declared) {
      if (only && !only(this.nameOf(tool.name))) continue; // a stateless request registers the one tool it calls
      server.registerTool(
        this.nameOf(tool.name),
        {
          title: tool.spec.title,
          description: tool.spec.description,
          // tools/list and tools/call are this host's own (below): the SDK needs no schema it would compile per server
          inputSchema: z.looseObject({}),
          annotations: tool.spec.annotations,
        },
        ((args: unknown, ctx: ServerContext) => this.run(tool, args, extraOf(ctx))) as never,
      );
    }
    let tools: Tool[] | undefined;
    server.server.setRequestHandler('tools/list', () => {
      tools ??= this.listing();
      return { tools };
    });
    this.answerCalls(server, only);
  }

  /**
   * Every tools/call goes straight to its tool (the SDK's own call path adds an output-schema check the tests make
   * instead). A call to a tool this server does not have (misspelled, or without the namespace prefix) is answered in
   * the error envelope with the closest registered name, instead of a bare "not found".
   */
  private answerCalls(server: McpServer, only?: (name: string) => boolean): void {
    const names = this.names;
    server.server.setRequestHandler('tools/call', (request, ctx) => {
      const name = request.params.name;
      const tool = this.declared.find((t) => this.nameOf(t.name) === name && (!only || only(name)));
      if (tool) return this.run(tool, request.params.arguments, extraOf(ctx));
      const suggestion = closestTool(name, names, this.namespace);
      return this.fail(
        new BlackboardError(
          'INVALID_ARGUMENT',
          `There is no tool "${name}" here${suggestion ? `: did you mean ${suggestion}?` : '.'} Its tools: ${names.join(', ')}.`,
          {
            path: 'name',
            ...(suggestion ? { suggestion } : {}),
          },
        ),
      );
    });
  }

  private async run(tool: Declared, args: unknown, extra: Extra): Promise<CallToolResult> {
    if (this.access.route) {
      // a request that names another identity in its `_meta` is served by that identity's tools
      let other: ToolHost | undefined;
      try {
        other = await this.access.route(extra);
      } catch (error) {
        return this.fail(error instanceof BlackboardError ? error : storeUnavailable(error, `complete ${tool.name}`));
      }
      const target = other?.declared.find((t) => t.name === tool.name);
      if (other && other !== this && target) return other.run(target, args, extra);
    }
    const writes = tool.spec.annotations.readOnlyHint !== true;
    if (writes && this.access.readOnly) {
      return this.fail(
        new BlackboardError(
          'FORBIDDEN',
          `${this.nameOf(tool.name)} changes the board, and this client has read-only access: nothing was changed. Use the read tools, or ask the operator for readwrite access.`,
        ),
      );
    }
    const given = prepareArgs(tool.spec.input, args ?? {});
    const parsed = tool.spec.input.safeParse(given);
    if (!parsed.success) return this.fail(argumentError(parsed.error, tool.spec.input, given));
    try {
      if (writes) await this.access.beforeWrite?.();
      const result = await tool.handler(parsed.data as never, extra, { operation: tool.name });
      return ok(result, await this.access.afterCall?.());
    } catch (error) {
      if (!(error instanceof BlackboardError) && !extra.signal.aborted) console.error(`[mcp-blackboard] ${tool.name} failed:`, error);
      return this.fail(error instanceof BlackboardError ? error : storeUnavailable(error, `complete ${tool.name}`));
    }
  }

  /** A failure: `isError`, no `structuredContent`, one text content holding `{"error": {code, message, details?}}`. */
  fail(error: BlackboardError): CallToolResult {
    const body = error.toJSON();
    body.error.message = this.render(body.error.message);
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }] };
  }
}

/**
 * Declares one tool. The handler returns plain data or throws a {@link BlackboardError}; the host turns either into
 * the result shape every tool shares. Anything else thrown is reported as STORE_UNAVAILABLE, never as a success.
 */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  host: ToolHost,
  name: string,
  spec: ToolSpec<I, O>,
  handler: (args: z.infer<I>, extra: Extra, call: CallOptions) => Promise<z.infer<O>>,
): void {
  host.declare({ name, spec: spec as unknown as ToolSpec<z.ZodObject, z.ZodObject>, handler: handler as Declared['handler'] });
}

/**
 * Annotations as listed: only what differs from MCP's defaults (not read-only, destructive, not idempotent, open
 * world), so a hint shown is a hint meant; a read-only tool needs no destructive or idempotent hint.
 */
function compactAnnotations(annotations: ToolAnnotations): ToolAnnotations {
  const { readOnlyHint, destructiveHint, idempotentHint, ...rest } = annotations;
  return {
    ...rest,
    ...(readOnlyHint ? { readOnlyHint } : {}),
    ...(!readOnlyHint && destructiveHint === false ? { destructiveHint } : {}),
    ...(!readOnlyHint && idempotentHint ? { idempotentHint } : {}),
    openWorldHint: false,
  };
}

/** A success: `structuredContent` plus the same JSON as text. */
export function ok(data: object, _meta?: Record<string, unknown>): CallToolResult {
  const text = JSON.stringify(data);
  return { content: [{ type: 'text', text }], structuredContent: data as Record<string, unknown>, ...(_meta ? { _meta } : {}) };
}

/**
 * A zod schema as JSON Schema for tools/list: no `$schema` line, and no ±(2^53-1) bounds (what an unbounded integer
 * carries): a bound shown is a real one. Argument objects keep `additionalProperties: false` (unknown arguments are
 * refused); result objects leave it out.
 */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, {
    target: 'draft-7',
    io,
    override: ({ jsonSchema: node, path }) => {
      if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
      if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
      // A result never has properties beyond its schema's; saying so in every object is noise. An argument object
      // with declared properties refuses others all the same; strict converters add the flag themselves, and only
      // an empty object needs it to convert (strict mode refuses an open object without properties).
      const declared = node.properties !== undefined && Object.keys(node.properties).length > 0;
      if ((io === 'output' || declared) && node.additionalProperties === false) delete node.additionalProperties;
      // A result's word lists (statuses, kinds) are named in the descriptions; listing them in every result schema
      // would cost each model turn tokens for what no client validates against.
      if (io === 'output' && node.type === 'string' && Array.isArray(node.enum)) delete node.enum;
      // a nested result object is told by its properties (the result itself stays `type: object`, as MCP asks)
      if (io === 'output' && node.type === 'object' && node.properties !== undefined && path.length > 0) delete node.type;
    },
  }) as Record<string, unknown>;
  delete out.$schema;
  if (io === 'output') dropNestedRequired(out.properties);
  return out;
}

/**
 * Drops `required` below a result's top level: a result's own fields keep it, the objects inside them (steps,
 * entries, budgets) are described by their properties alone, which keeps every model turn's tool list small.
 */
function dropNestedRequired(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) dropNestedRequired(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const record = node as Record<string, unknown>;
  if (Array.isArray(record.required)) delete record.required;
  for (const value of Object.values(record)) dropNestedRequired(value);
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
