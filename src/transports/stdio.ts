// The stdio transport: one JSON-RPC message per line on stdin/stdout, with a size limit that skips an oversized
// message and answers it with an error (the SDK's own transport closes the connection instead), and the hint a
// person gets when they start the server in a terminal.
import { relative } from 'node:path';
import {
  ProtocolErrorCode as ErrorCode,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  deserializeMessage,
  serializeMessage,
  type JSONRPCMessage,
  type RequestId,
  type Transport,
} from '@modelcontextprotocol/server';
import { serveStdio as serveStdioEntry } from '@modelcontextprotocol/server/stdio';
import type { Config } from '../config.js';
import { createServer } from '../server.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { clientNameIn, followListens } from './inbound.js';
import { LineReader, readableId, type OversizedMessage } from './stdio-lines.js';

/**
 * Newline-delimited JSON-RPC over a process's stdin and stdout, like the SDK's `StdioServerTransport` (and using its
 * framing functions), but a message over `maxMessageBytes` is skipped up to its newline and answered with an
 * Invalid Request error carrying its id (when one can be found), with one line on stderr; a line that is not JSON is
 * answered with a Parse error. The connection stays open either way.
 */
export class LimitedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** sees every inbound message before the SDK does; a request it refuses is answered with that error instead */
  onInbound?: (message: JSONRPCMessage) => { code: number; message: string } | undefined;
  private readonly reader: LineReader;
  private started = false;

  constructor(
    readonly maxMessageBytes: number,
    private readonly stdin: NodeJS.ReadableStream = process.stdin,
    private readonly stdout: NodeJS.WritableStream = process.stdout,
    private readonly log: (line: string) => void = (line) => console.error(line),
  ) {
    this.reader = new LineReader(
      maxMessageBytes,
      (line) => this.onLine(line),
      (skipped) => this.onOversized(skipped),
    );
  }

  private readonly onData = (chunk: Buffer): void => this.reader.push(chunk);
  private readonly onStreamError = (error: Error): void => this.onerror?.(error);
  /** stdout failing (the client closed its end: EPIPE) ends the connection as stdin's end does, not the process */
  private readonly onStdoutError = (error: Error): void => {
    this.stdoutFailed = true;
    this.onerror?.(error);
    void this.close();
  };
  private stdoutFailed = false;
  private isClosed = false;
  /** requests read and not answered yet, and what waits for them all to be answered */
  private readonly pending = new Set<RequestId>();
  private onAnswered?: () => void;

  async start(): Promise<void> {
    if (this.started) throw new Error('LimitedStdioTransport already started');
    this.started = true;
    this.stdin.on('data', this.onData);
    this.stdin.on('error', this.onStreamError);
    this.stdout.on('error', this.onStdoutError);
  }

  private onLine(line: string): void {
    if (line.trim() === '') return;
    let message: JSONRPCMessage;
    try {
      message = deserializeMessage(line);
    } catch (error) {
      const parse = error instanceof SyntaxError;
      void this.reply(
        parse ? undefined : readableId(line),
        parse ? ErrorCode.ParseError : ErrorCode.InvalidRequest,
        parse
          ? 'Parse error: a line on stdin is not JSON. Send one JSON-RPC message per line.'
          : 'Invalid Request: the line is JSON but not a JSON-RPC 2.0 message.',
      );
      this.onerror?.(error as Error);
      return;
    }
    const refused = this.onInbound?.(message);
    if (refused && 'id' in message) {
      void this.reply(message.id, refused.code, refused.message);
      return;
    }
    if ('method' in message && 'id' in message) this.pending.add(message.id);
    // a cancelled request is never answered: it is no longer waited for (nor kept, call after call)
    else if ('method' in message && message.method === 'notifications/cancelled') this.settle(message.params?.requestId as RequestId);
    this.onmessage?.(message);
  }

  private onOversized({ bytes, id }: OversizedMessage): void {
    this.log(
      `mcp-blackboard: skipped a message of ${bytes} bytes on stdin: over the ${this.maxMessageBytes}-byte limit` +
        (id !== undefined ? ` (answered request ${JSON.stringify(id)} with an error)` : ''),
    );
    void this.reply(
      id,
      ErrorCode.InvalidRequest,
      `Message too large: ${bytes} bytes is over this server's limit of ${this.maxMessageBytes} bytes per stdio message, so it was not read and nothing was done. Send less in one call (split large values over several keys).`,
      { bytes, maxMessageBytes: this.maxMessageBytes },
    );
  }

  private reply(id: RequestId | undefined, code: number, message: string, data?: unknown): Promise<void> {
    return this.send({
      jsonrpc: '2.0',
      ...(id !== undefined ? { id } : {}),
      error: { code, message, ...(data ? { data } : {}) },
    } as JSONRPCMessage);
  }

  send(message: JSONRPCMessage): Promise<void> {
    if ('id' in message && message.id !== undefined && ('result' in message || 'error' in message)) this.settle(message.id);
    return new Promise((resolve) => {
      if (this.stdoutFailed) return resolve(); // nobody reads any more
      if (this.stdout.write(serializeMessage(message))) resolve();
      else {
        this.stdout.once('drain', () => resolve());
        void this.closed.then(() => this.stdoutFailed && resolve());
      }
    });
  }

  /** A request answered or cancelled: once none is left, whoever waits for that is told. */
  private settle(id: RequestId | undefined): void {
    if (id !== undefined && this.pending.delete(id) && this.pending.size === 0) this.onAnswered?.();
  }

  /**
   * Resolves once every request read so far is answered (or cancelled), or after `ms`: when stdin ends, the calls already made (a
   * write, say) still get their replies out to a client that reads on, while one that waits (a watch) does not hold
   * the exit for long.
   */
  answered(ms: number): Promise<void> {
    if (this.pending.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.onAnswered = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private resolveClosed: () => void = () => {};
  /** resolves once the transport closed */
  readonly closed = new Promise<void>((resolve) => (this.resolveClosed = resolve));

  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.resolveClosed();
    this.stdin.off('data', this.onData);
    this.stdin.off('error', this.onStreamError);
    if (this.stdin.listenerCount('data') === 0) this.stdin.pause();
    this.onclose?.();
  }
}

/**
 * The largest message accepted on stdin: the SDK's default (10 MiB), or more when `--max-value-bytes` allows values
 * that would not fit in it, so that any value the server accepts can be sent in one call.
 */
export function maxStdioMessageBytes(config: Pick<Config, 'maxValueBytes'>): number {
  return Math.max(STDIO_DEFAULT_MAX_BUFFER_SIZE, config.maxValueBytes + 1024 * 1024);
}

/** How long the calls in flight when stdin ends may take to answer before the server exits. */
const STDIN_END_GRACE_MS = 1000;

/**
 * Serves one connection over stdin/stdout, in the revision the client opens with (2026-07-28 or a 2025 one);
 * resolves when the client goes away.
 */
export async function serveStdio(config: Config, store: VersionedStore): Promise<{ tools: number; closed: Promise<void> }> {
  // The first server is made at start (it records the thread and fixes budgets, as a connection always has); a
  // second one is made only when the SDK discarded the first after a client's `server/discover` probe.
  let first: Awaited<ReturnType<typeof createServer>> | undefined = await createServer(config, store);
  const tools = first.tools.length;
  const opened = first;
  const transport = new LimitedStdioTransport(maxStdioMessageBytes(config));
  let close!: () => void;
  const closed = new Promise<void>((resolve) => {
    close = resolve;
    process.stdin.once('end', () => void transport.answered(STDIN_END_GRACE_MS).then(resolve));
  });
  let current: Awaited<ReturnType<typeof createServer>> | undefined;
  const listens = followListens(store, config.namespace, () => current?.server);
  // a 2026-07-28 client sends no `initialize`: its name comes in each request's `_meta`, and the roster shows it
  let clientName: string | undefined;
  const named = (bb: Awaited<ReturnType<typeof createServer>>) => {
    bb.services.presence.client = () => bb.server.server.getClientVersion()?.name ?? clientName;
    return bb;
  };
  named(opened);
  transport.onInbound = (message) => {
    clientName = clientNameIn(message) ?? clientName;
    return listens.inbound(message);
  };
  const handle = serveStdioEntry(
    async () => {
      const bb = first ?? named(await createServer(config, store));
      first = undefined;
      current = bb;
      return bb.server;
    },
    { transport, onerror: (error) => void error },
  );
  transport.closed.then(close, close).finally(() => listens.stop());
  void handle;
  // the client went away: the roster shows this agent gone at once (best-effort, bounded so exit never waits long)
  const leave = (): Promise<void> =>
    Promise.race([(current ?? opened).services.presence.leave(), new Promise<void>((r) => setTimeout(r, 2000).unref())]);
  return { tools, closed: closed.then(leave) };
}

/**
 * What a person who started the server in a terminal is told (on stderr), or undefined when stdin is not a terminal
 * (a client started it). `script` is the path node was given, `args` the server's arguments.
 */
export function firstRunHint(stdinIsTTY: boolean, script: string, args: string[], cwd = process.cwd()): string | undefined {
  if (!stdinIsTTY) return undefined;
  const rel = relative(cwd, script);
  const path = rel !== '' && !rel.startsWith('..') && rel.length < script.length ? rel : script;
  const command = ['node', path, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`)).join(' ');
  return [
    'mcp-blackboard: this is an MCP server. It speaks JSON-RPC on stdin/stdout and is meant to be started by an MCP client',
    '  (Claude Desktop, Claude Code, VS Code, Cursor, or your agent), not typed at.',
    `  To try it by hand: npx @modelcontextprotocol/inspector -- ${command}   (the Inspector needs Node 22 or newer)`,
    '  To stop it: Ctrl+C (or Ctrl+D).',
  ].join('\n');
}
