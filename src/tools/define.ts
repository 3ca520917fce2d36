// How tools are declared and registered: the tool host, results, progress.
import type {
  CallToolResult,
  ClientCapabilities,
  LoggingLevel,
  McpServer,
  RequestMeta,
  ServerContext,
  ServerNotification,
  Tool,
  ToolAnnotations,
} from '@modelcontextprotocol/server';
import type * as z from 'zod';
import { truncate, type CallOptions } from '../context.js';
import { BlackboardError, storeUnavailable } from '../errors.js';
import { renderMentions } from '../tool-mentions.js';
import { argumentError, closestTool, prepareArgs } from './argument-errors.js';
import { clientCapabilities } from './client-capabilities.js';
import { compactAnnotations, jsonSchema } from './listing.js';
import { ProcessCache } from '../process-cache.js';

export { withProgress } from './progress.js';

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
  /** the tool's `_meta` in tools/list (e.g. the app it is shown with) */
  meta?: Record<string, unknown>;
  /** the tool exists only for a client whose capabilities pass this (listed and callable for it alone) */
  requires?: (capabilities: ClientCapabilities | undefined) => boolean;
  /** the result's text content, instead of its JSON (the structured content stays the data) */
  text?: (data: never) => string;
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
      /** runs after every call that failed, writing nothing; returns the error reply's `_meta` */
      afterFailure?: () => Promise<Record<string, unknown> | undefined>;
      /** the tools of the identity a request names in its `_meta`, when it is not this host's */
      route?: (extra: Extra) => Promise<ToolHost | undefined>;
    } = {},
    /** which declared tools to register (`--tools`, `--read-only`): `true`, or why one is left out; default all */
    private readonly selected: (name: string, annotations: ToolAnnotations) => true | string = () => true,
  ) {}

  /** why each declared tool this server leaves out is left out, by base name */
  private readonly leftOut = new Map<string, string>();

  /** The registered names every client has (not those only some clients get), in declaration order. */
  get names(): string[] {
    return this.declared.filter((tool) => !tool.spec.requires).map((tool) => this.nameOf(tool.name));
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
    const verdict = this.selected(tool.name, tool.spec.annotations);
    if (verdict === true) this.declared.push(tool);
    else this.leftOut.set(tool.name, verdict);
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
  listing(capabilities?: ClientCapabilities): Tool[] {
    return this.declared
      .filter((tool) => this.offered(tool, capabilities))
      .map(({ name, spec }) => ({
        name: this.nameOf(name),
        title: spec.title,
        description: this.render(spec.description),
        inputSchema: this.renderSchema(jsonSchema(spec.input, 'input')) as Tool['inputSchema'],
        outputSchema: this.renderSchema(jsonSchema(spec.output, 'output')) as Tool['outputSchema'],
        annotations: compactAnnotations(spec.annotations),
        ...(spec.meta ? { _meta: spec.meta } : {}),
      }));
  }

  /** Whether a client with these capabilities has the tool. */
  private offered(tool: Declared, capabilities: ClientCapabilities | undefined): boolean {
    return !tool.spec.requires || tool.spec.requires(capabilities);
  }

  /**
   * Serves the declared tools on `server` (`only`: the one a stateless request calls). Arguments are checked against
   * each tool's strict schema by {@link run}, so arguments that break it come back in the error envelope
   * (`INVALID_ARGUMENT` with `details.path`); tools/list advertises the strict schemas.
   */
  install(server: McpServer, only?: (name: string) => boolean): void {
    this.mcp = server;
    // tools/list and tools/call are this host's own: the SDK keeps no per-tool record (a server is made per stateless
    // request, so what it would build per tool is paid on every call). The list is fixed for the life of the server.
    server.server.registerCapabilities({ tools: { listChanged: false } });
    server.server.setRequestHandler('tools/list', (_request, ctx) => ({ tools: this.cachedListing(clientCapabilities(server, ctx)) }));
    this.answerCalls(server, only);
  }

  /**
   * {@link listing}, computed once per process for each namespace, tool set and set of conditional tools the client
   * gets (it is the same for all of them).
   */
  private cachedListing(capabilities: ClientCapabilities | undefined): Tool[] {
    const variant = this.declared
      .filter((t) => t.spec.requires && this.offered(t, capabilities))
      .map((t) => t.name)
      .join(',');
    return LISTINGS.get(`${this.namespace ?? ''}|${this.names.join(',')}|${variant}`, () => this.listing(capabilities));
  }

  /**
   * Every tools/call goes straight to its tool (the SDK's own call path adds an output-schema check the tests make
   * instead). A call to a tool this server does not have (misspelled, or without the namespace prefix) is answered in
   * the error envelope with the closest registered name, instead of a bare "not found".
   */
  private answerCalls(server: McpServer, only?: (name: string) => boolean): void {
    const names = this.names;
    // by registered name, built once: a call looks its tool up without walking the list
    const byName = new Map(this.declared.map((t) => [this.nameOf(t.name), t]));
    server.server.setRequestHandler('tools/call', (request, ctx) => {
      const name = request.params.name;
      const found = byName.get(name);
      const tool =
        found && (!only || only(name)) && (!found.spec.requires || this.offered(found, clientCapabilities(server, ctx)))
          ? found
          : undefined;
      if (tool) return this.run(tool, request.params.arguments, extraOf(ctx));
      // a real tool this server does not serve is said to be so, and why, not matched to a neighbour
      const base = this.namespace && name.startsWith(`${this.namespace}_`) ? name.slice(this.namespace.length + 1) : name;
      const absent = found ? 'it is only for clients that render MCP Apps' : this.leftOut.get(base);
      const suggestion = absent ? undefined : closestTool(name, names, this.namespace);
      const why = absent ? `: ${absent}.` : suggestion ? `: did you mean ${suggestion}?` : '.';
      return this.fail(
        new BlackboardError('INVALID_ARGUMENT', `There is no tool "${truncate(name)}" here${why} Its tools: ${names.join(', ')}.`, {
          path: 'name',
          ...(suggestion ? { suggestion } : {}),
        }),
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
      const result = this.renderHint(await tool.handler(parsed.data as never, extra, { operation: tool.name }));
      const meta = await this.access.afterCall?.();
      return ok(result, meta, tool.spec.text?.(result as never));
    } catch (error) {
      if (!(error instanceof BlackboardError) && !extra.signal.aborted) console.error(`[mcp-blackboard] ${tool.name} failed:`, error);
      const failure = error instanceof BlackboardError ? error : storeUnavailable(error, `complete ${tool.name}`);
      // a refused call says that mail is waiting too (not while the store is away); it writes nothing
      const meta = failure.code === 'STORE_UNAVAILABLE' ? undefined : await this.access.afterFailure?.().catch(() => undefined);
      return this.fail(failure, meta);
    }
  }

  /** A result's `hint` (advice to the model) with its tool mentions rendered as errors' are; left out if nothing is left. */
  private renderHint(result: object): object {
    if (!('hint' in result) || typeof result.hint !== 'string') return result;
    const { hint: _raw, ...rest } = result;
    const text = this.render(result.hint);
    return text ? { ...rest, hint: text } : rest;
  }

  /**
   * A failure: `isError`, no `structuredContent`, one text content holding `{"error": {code, message, details?}}`;
   * `_meta` as a success would carry it.
   */
  fail(error: BlackboardError, _meta?: Record<string, unknown>): CallToolResult {
    const body = error.toJSON();
    body.error.message = this.render(body.error.message);
    return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], ...(_meta ? { _meta } : {}) };
  }
}

/**
 * Declares one tool. `spec` is a function of nothing but constants (it runs once per process, see {@link SPECS}).
 * The handler returns plain data or throws a {@link BlackboardError}; the host turns either into the result shape
 * every tool shares. Anything else thrown is reported as STORE_UNAVAILABLE, never as a success.
 */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  host: ToolHost,
  name: string,
  spec: () => ToolSpec<I, O>,
  handler: (args: z.infer<I>, extra: Extra, call: CallOptions) => Promise<z.infer<O>>,
): void {
  let built = SPECS.get(name);
  if (!built) {
    built = spec() as unknown as ToolSpec<z.ZodObject, z.ZodObject>;
    SPECS.set(name, built);
  }
  host.declare({ name, spec: built, handler: handler as Declared['handler'] });
}

/**
 * Each tool's spec, built once per process: a spec is the same for every server (its texts are rendered per server
 * when listed), and schemas are costly to build, while a server is made for every stateless request.
 */
const SPECS = new Map<string, ToolSpec<z.ZodObject, z.ZodObject>>();
/** tools/list as rendered, per namespace and tool set */
const LISTINGS = new ProcessCache<Tool[]>();

/** A success: `structuredContent` plus the same JSON as text (or `text`, for a tool with its own text form). */
export function ok(data: object, _meta?: Record<string, unknown>, text: string = JSON.stringify(data)): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: data as Record<string, unknown>, ...(_meta ? { _meta } : {}) };
}
