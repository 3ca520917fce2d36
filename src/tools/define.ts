// How tools are declared and registered: the tool host, argument errors with suggestions, results, progress.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  ListToolsRequestSchema,
  type CallToolResult,
  type ServerNotification,
  type ServerRequest,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import type { CallOptions } from '../context.js';
import { BlackboardError, storeUnavailable } from '../errors.js';
import { renderMentions } from '../tool-mentions.js';

export type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

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
      /** runs after every call that succeeded, reads included (the caller's sign of life, which keeps its claims) */
      afterCall?: () => Promise<void>;
    } = {},
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
    this.declared.push(tool);
  }

  /** The tools as tools/list shows them: rendered descriptions, exact JSON schemas without `$schema`. */
  listing(): Tool[] {
    return this.declared.map(({ name, spec }) => ({
      name: this.nameOf(name),
      title: spec.title,
      description: this.render(spec.description),
      inputSchema: this.renderSchema(jsonSchema(spec.input, 'input')) as Tool['inputSchema'],
      outputSchema: this.renderSchema(jsonSchema(spec.output, 'output')) as Tool['outputSchema'],
      annotations: { openWorldHint: false, ...spec.annotations },
    }));
  }

  /**
   * Registers every declared tool on `server`. The SDK is given a permissive argument schema, so that arguments
   * that break the strict one reach {@link run} and come back in the error envelope (`INVALID_ARGUMENT` with
   * `details.path`) instead of as the SDK's plain validation text; tools/list still advertises the strict schemas.
   */
  install(server: McpServer): void {
    this.mcp = server;
    for (const tool of this.declared) {
      server.registerTool(
        this.nameOf(tool.name),
        {
          title: tool.spec.title,
          description: tool.spec.description,
          inputSchema: z.looseObject({}),
          outputSchema: tool.spec.output,
          annotations: tool.spec.annotations,
        },
        ((args: unknown, extra: Extra) => this.run(tool, args, extra)) as never,
      );
    }
    const tools = this.listing();
    server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
    // The list is fixed for the life of the server.
    server.server.registerCapabilities({ tools: { listChanged: false } });
  }

  private async run(tool: Declared, args: unknown, extra: Extra): Promise<CallToolResult> {
    const writes = tool.spec.annotations.readOnlyHint !== true;
    if (writes && this.access.readOnly) {
      return this.fail(
        new BlackboardError(
          'FORBIDDEN',
          `${this.nameOf(tool.name)} changes the board, and this client has read-only access: nothing was changed. Use the read tools, or ask the operator for readwrite access.`,
        ),
      );
    }
    const parsed = tool.spec.input.safeParse(args ?? {});
    if (!parsed.success) return this.fail(argumentError(parsed.error, tool.spec.input, args));
    try {
      if (writes) await this.access.beforeWrite?.();
      const result = await tool.handler(parsed.data as never, extra, { operation: tool.name });
      await this.access.afterCall?.();
      return ok(result);
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

/** A success: `structuredContent` plus the same JSON as text. */
export function ok(data: object): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data as Record<string, unknown> };
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
    override: ({ jsonSchema: node }) => {
      if (node.minimum === Number.MIN_SAFE_INTEGER) delete node.minimum;
      if (node.maximum === Number.MAX_SAFE_INTEGER) delete node.maximum;
      // A result never has properties beyond its schema's; saying so in every object is noise.
      if (io === 'output' && node.additionalProperties === false) delete node.additionalProperties;
    },
  }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

/** The first way `args` breaks `schema`, as INVALID_ARGUMENT naming the argument (and a likely name for a typo). */
export function argumentError(error: z.ZodError, schema: z.ZodType, args: unknown): BlackboardError {
  const issue = error.issues[0];
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0];
    const path = pathText([...issue.path, key]);
    const known = Object.keys(objectAt(schema, issue.path)?.shape ?? {});
    const suggestion = closest(key, known);
    return new BlackboardError(
      'INVALID_ARGUMENT',
      `Unknown argument "${path}"${suggestion ? `: did you mean ${suggestion}?` : '.'} ${known.length > 0 ? `Arguments here: ${known.join(', ')}.` : 'It takes no arguments here.'}`,
      { path, ...(suggestion ? { suggestion } : {}) },
    );
  }
  const path = pathText(issue.path);
  const value = valueAt(args, issue.path);
  let what: string;
  if (value === undefined) what = 'is required';
  else if (issue.code === 'invalid_type') what = `must be ${issue.expected === 'int' ? 'a whole number' : `of type ${issue.expected}`}, not ${typeName(value)}`;
  else if (issue.code === 'invalid_value') what = `must be one of: ${issue.values.map((v) => String(v)).join(', ')}`;
  else if (issue.code === 'too_small' || issue.code === 'too_big') what = `is out of range: ${issue.message.replace(/^Too (small|big): /, '')}`;
  else what = `is not valid: ${issue.message}`;
  return new BlackboardError('INVALID_ARGUMENT', `${path || 'The arguments'} ${what}.`, { path });
}

function pathText(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i > 0 ? '.' : ''}${String(p)}`)).join('');
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const p of path) at = at !== null && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[p] : undefined;
  return at;
}

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** The object schema reached by following `path` (through optional, nullable, array and union wrappers). */
function objectAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodObject | undefined {
  const objects = (s: z.ZodType): z.ZodObject[] => {
    if (s instanceof z.ZodObject) return [s];
    if (s instanceof z.ZodOptional || s instanceof z.ZodNullable || s instanceof z.ZodDefault) return objects(s.unwrap() as z.ZodType);
    if (s instanceof z.ZodUnion) return (s.options as z.ZodType[]).flatMap(objects);
    return [];
  };
  let at: z.ZodType | undefined = schema;
  for (const p of path) {
    if (!at) return undefined;
    if (typeof p === 'number') {
      let s: z.ZodType = at;
      while (s instanceof z.ZodOptional || s instanceof z.ZodNullable) s = s.unwrap() as z.ZodType;
      at = s instanceof z.ZodArray ? (s.element as z.ZodType) : undefined;
    } else {
      at = objects(at).map((o) => o.shape[String(p)] as z.ZodType | undefined).find(Boolean);
    }
  }
  return at ? objects(at)[0] : undefined;
}

/** The known name closest to a misspelled one (case, `_` and `-` ignored; a few edits at most). */
export function closest(name: string, known: string[]): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/[_-]/g, '');
  let best: { name: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(norm(name), norm(candidate));
    if (distance <= Math.max(1, Math.floor(candidate.length / 3)) && (!best || distance < best.distance)) best = { name: candidate, distance };
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length];
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
