import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client, InMemoryTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { afterEach, expect } from 'vitest';
import { defaultConfig, type Config } from '../src/config.js';
import { createServer, type BlackboardServer } from '../src/server.js';
import type { SessionOptions } from '../src/services/session.js';
import { MemoryBackend } from '../src/store/memory/backend.js';
import { VersionedStore } from '../src/store/versioned-store.js';

export const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');

/** The error codes the README documents, spelled out here (not taken from the source) so a test holds the code to them. */
export const DOCUMENTED_CODES: readonly string[] = [
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'VERSION_CONFLICT',
  'MULTIPLE_FINAL_ANSWERS',
  'LIMIT_REACHED',
  'INVALID_TRANSITION',
  'RUN_FINISHED',
  'VALUE_TOO_LARGE',
  'FORBIDDEN',
  'CHECKPOINT_CORRUPT',
  'STORE_UNAVAILABLE',
  'REVISION_COMPACTED',
  'CLAIM_LOST',
];

export interface ToolError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** A real MCP client talking to one server, with helpers that check the documented result shape on every call. */
export class Agent {
  constructor(
    readonly client: Client,
    private readonly prefix = '',
  ) {}

  raw(name: string, args: Record<string, unknown> = {}, options?: Parameters<Client['callTool']>[1]): Promise<CallToolResult> {
    return this.client.callTool({ name: this.prefix + name, arguments: args }, options) as Promise<CallToolResult>;
  }

  /** Calls a tool that must succeed; returns its structuredContent (checked equal to the text content). */
  // biome-ignore lint/suspicious/noExplicitAny: tests read results field by field
  async ok<T = Record<string, any>>(name: string, args: Record<string, unknown> = {}): Promise<T> {
    const result = await this.raw(name, args);
    if (result.isError) throw new Error(`${name} failed: ${(result.content[0] as { text: string }).text}`);
    expect(result.structuredContent).toBeDefined();
    expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent);
    return result.structuredContent as T;
  }

  /** Calls a tool that must fail with a documented error code; returns the error (and checks its shape). */
  async err(name: string, args: Record<string, unknown> = {}): Promise<ToolError> {
    const result = await this.raw(name, args);
    expect(result.isError, `${name} should fail`).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(result.content).toHaveLength(1);
    const body = JSON.parse((result.content[0] as { text: string }).text) as { error: ToolError };
    expect(typeof body.error.code).toBe('string');
    expect(body.error.message.length).toBeGreaterThan(10);
    return body.error;
  }
}

/**
 * Sets `k0`, `k1`, … to values of `bytes` characters until one is refused (a store filling up), at most `most`:
 * the indexes acknowledged, and the refusal (none when every write went through).
 */
export async function writeUntilRefused(agent: Agent, bytes: number, most: number): Promise<{ acked: number[]; refused?: ToolError }> {
  const acked: number[] = [];
  for (let i = 0; i < most; i++) {
    const reply = await agent.raw('state_set', { key: `k${i}`, value: 'x'.repeat(bytes) });
    if (reply.isError) return { acked, refused: (JSON.parse((reply.content[0] as { text: string }).text) as { error: ToolError }).error };
    acked.push(i);
  }
  return { acked };
}

export interface Connected extends Agent {
  bb: BlackboardServer;
  store: VersionedStore;
  close(): Promise<void>;
}

export function memoryStore(maxValueBytes?: number): VersionedStore {
  return new VersionedStore(new MemoryBackend(), { sweepIntervalMs: 0, maxValueBytes });
}

/** A server over an in-memory transport (unit level). Pass `store` to share one store between agents. */
/** The protocol revisions a client can speak: `modern` is 2026-07-28, `legacy` 2025-11-25 (with `initialize`). */
export type Era = 'modern' | 'legacy';

/** The era test clients speak unless a test asks for one (`BLACKBOARD_TEST_ERA`, default modern). */
export const DEFAULT_ERA: Era = process.env.BLACKBOARD_TEST_ERA === 'legacy' ? 'legacy' : 'modern';

/** A v2 client that speaks `era`: pinned to 2026-07-28, or the 2025 `initialize` handshake. */
export function newClient(era: Era = DEFAULT_ERA, name = 'test-agent'): Client {
  return new Client({ name, version: '1.0.0' }, era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {});
}

export async function connect(
  options: { config?: Partial<Config>; store?: VersionedStore; identity?: SessionOptions; era?: Era; clientName?: string } = {},
): Promise<Connected> {
  const config = defaultConfig({ progressIntervalMs: 100, tools: ['all'], ...options.config });
  const store = options.store ?? memoryStore(config.maxValueBytes);
  const bb = await createServer(config, store, options.identity);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = newClient(options.era, options.clientName);
  // the SDK's connection entry, as over stdio: it settles the revision the client opens with
  const entry = serveStdio(() => bb.server, { transport: serverSide });
  await client.connect(clientSide);
  const agent = new Agent(client, config.namespace ? `${config.namespace}_` : '') as Connected;
  agent.bb = bb;
  agent.store = store;
  agent.close = async () => {
    await client.close();
    await entry.close();
    await bb.close();
  };
  return agent;
}

/** Returns a `connect` whose agents are all closed after each test. Call once at the top of a test file. */
export function agentsClosedAfterEach(): (options?: Parameters<typeof connect>[0]) => Promise<Connected> {
  let open: Connected[] = [];
  afterEach(async () => {
    await Promise.all(open.map((a) => a.close()));
    open = [];
  });
  return async (options) => {
    const a = await connect(options);
    open.push(a);
    return a;
  };
}

export type Spawned = Agent & {
  close(): Promise<void>;
  /** kill -9, on purpose */
  kill(): void;
  stderr: () => string;
  pid?: number;
};

/** The built server as a child process over stdio (integration level). */
export async function spawnAgent(args: string[], env: Record<string, string> = {}, cwd?: string, era: Era = DEFAULT_ERA): Promise<Spawned> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, ...args],
    // every tool, unless the test chooses (`--tools` or BLACKBOARD_TOOLS): most tests exercise more than the default profile
    env: { BLACKBOARD_TOOLS: 'all', ...(process.env as Record<string, string>), ...env },
    stderr: 'pipe',
    cwd,
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = newClient(era, 'test-process');
  await client.connect(transport);
  // A 2026 client's connect probes a sibling process and returns before this one has opened its store: one round trip
  // makes "spawned" mean "serving", so a test that then breaks the database breaks it under a running server.
  if (era === 'modern') await client.discover();
  const namespaceAt = args.indexOf('--namespace');
  const namespace = namespaceAt >= 0 ? args[namespaceAt + 1] : env.BLACKBOARD_NAMESPACE;
  const agent = new Agent(client, namespace ? `${namespace}_` : '') as Spawned;
  let closing = false;
  // A server that dies on its own is a failure worth its stderr in the test output.
  const clientOnClose = transport.onclose;
  // how it ended (exit code or signal), for the message below
  const child = (transport as unknown as { _process?: ChildProcess })._process;
  let ended = 'still running';
  child?.once('exit', (code, signal) => (ended = signal ? `signal ${signal}` : `exit code ${code}`));
  transport.onclose = () => {
    if (!closing)
      console.error(`[${new Date().toISOString()}] server process ${child?.pid} exited unexpectedly (${ended}); its stderr:\n${stderr}`);
    clientOnClose?.();
  };
  agent.close = () => {
    closing = true;
    return client.close();
  };
  agent.kill = () => {
    closing = true;
    process.kill(transport.pid!, 'SIGKILL');
  };
  agent.stderr = () => stderr;
  agent.pid = transport.pid ?? undefined;
  return agent;
}

/** Runs the CLI to completion (for --help, --version, bad flags, export/import). */
export function runCli(
  args: string[],
  input?: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, [CLI, ...args], {
      env: { BLACKBOARD_TOOLS: 'all', ...process.env, ...env },
      stdio: 'pipe',
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    if (input !== undefined) child.stdin!.end(input);
    else child.stdin!.end();
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
