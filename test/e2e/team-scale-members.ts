// The team-scale test's agents: one calling interface over a stdio server process, an HTTP client of either SDK or
// protocol revision, and the Python `mcp` client; the HTTP server processes they share; and the Python venv.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPClientTransport, type CallToolResult } from '@modelcontextprotocol/client';
import { CLI, newClient, spawnAgent, type Era } from '../helpers.js';

/** A call's outcome: its structuredContent, or the tool error's code and text. A call that fails as a call throws. */
// biome-ignore lint/suspicious/noExplicitAny: the test reads results field by field
export type Reply = { ok: true; value: any } | { ok: false; code: string; text: string };

/** One agent's connection, whatever carries it. */
export interface Caller {
  call(tool: string, args: Record<string, unknown>): Promise<Reply>;
  /** kill -9 of the agent's own server process (stdio agents only) */
  kill?(): void;
  close(): Promise<void>;
}

function fromResult(result: CallToolResult): Reply {
  if (!result.isError) return { ok: true, value: result.structuredContent };
  const text = (result.content[0] as { text: string }).text;
  let code = 'UNKNOWN';
  try {
    code = (JSON.parse(text) as { error: { code: string } }).error.code;
  } catch {
    // not the documented error shape: the text tells
  }
  return { ok: false, code, text };
}

/** An agent on a stdio server process of its own (`--agent NAME --agent-type TYPE --thread t-NAME`). */
export async function stdioCaller(store: string, name: string, type: string, era: Era): Promise<Caller> {
  const agent = await spawnAgent(['--store', store, '--agent', name, '--agent-type', type, '--thread', `t-${name}`], {}, undefined, era);
  return {
    call: async (tool, args) => fromResult(await agent.raw(tool, args)),
    kill: () => agent.kill(),
    close: () => agent.close(),
  };
}

/** An HTTP agent by its token (the auth file names its agent and type); `v1` is `@modelcontextprotocol/sdk` (2025-11-25). */
export async function httpCaller(url: string, token: string, thread: string, client: 'v2-2026' | 'v1-2025', name: string): Promise<Caller> {
  const headers = { authorization: `Bearer ${token}`, 'x-blackboard-thread': thread };
  if (client === 'v2-2026') {
    const c = newClient('modern', name);
    await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    return {
      call: async (tool, args) => fromResult((await c.callTool({ name: tool, arguments: args })) as CallToolResult),
      close: () => c.close(),
    };
  }
  const c = new V1Client({ name, version: '1.0.0' });
  await c.connect(new V1HttpTransport(new URL(url), { requestInit: { headers } }));
  return {
    call: async (tool, args) => fromResult((await c.callTool({ name: tool, arguments: args })) as CallToolResult),
    close: () => c.close(),
  };
}

/** The Python `mcp` client as an agent: a script that makes the calls this process asks for, concurrently. */
export async function pythonCaller(
  python: string,
  url: string,
  token: string,
  thread: string,
): Promise<Caller & { protocolVersion: string }> {
  const script = join(import.meta.dirname, '..', 'fixtures', 'python-team-agent.py');
  const child = spawn(python, [script, url, token, thread], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  let ready: (version: string) => void;
  const started = new Promise<string>((resolve) => (ready = resolve));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const msg = JSON.parse(line) as {
      id?: number;
      ready?: boolean;
      protocolVersion?: string;
      result?: unknown;
      isError?: boolean;
      text?: string;
      failed?: string;
    };
    if (msg.ready) return ready(String(msg.protocolVersion));
    const w = waiting.get(msg.id!);
    waiting.delete(msg.id!);
    if (!w) return;
    if (msg.failed !== undefined) w.reject(new Error(`python client call failed: ${msg.failed}`));
    else if (msg.isError) w.resolve(fromResult({ isError: true, content: [{ type: 'text', text: msg.text! }] }));
    else w.resolve({ ok: true, value: msg.result });
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => {
      const error = new Error(`the Python client exited (${code}): ${stderr.slice(-2000)}`);
      for (const w of waiting.values()) w.reject(error);
      waiting.clear();
      reject(error);
    }),
  );
  exited.catch(() => {});
  const protocolVersion = await Promise.race([started, exited]);
  let next = 0;
  return {
    protocolVersion,
    call: (tool, args) =>
      new Promise<Reply>((resolve, reject) => {
        const id = ++next;
        waiting.set(id, { resolve, reject });
        child.stdin!.write(`${JSON.stringify({ id, tool, args })}\n`);
      }),
    close: async () => {
      child.stdin!.end();
      await Promise.race([exited.catch(() => {}), new Promise((r) => setTimeout(r, 3000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** An `--http` server process on a free port with an auth file; its MCP URL. */
export async function httpServer(store: string, authFile: string, running: ChildProcess[]): Promise<string> {
  const child = spawn(process.execPath, [CLI, '--http', '0', '--store', store, '--auth', authFile, '--tools', 'all'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  running.push(child);
  return new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(err);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`the HTTP server exited (${code}): ${err}`)));
  });
}

/** A venv of this test's own with the Python `mcp` package (from this machine's pip index); undefined, or why not. */
export function preparePython(): { python?: string; why?: string } {
  const venv = join(tmpdir(), 'mcp-blackboard-python-team');
  const python = join(venv, 'bin', 'python');
  if (spawnSync(python, ['-c', 'import mcp'], { stdio: 'ignore' }).status === 0) return { python };
  if (spawnSync('python3', ['--version'], { stdio: 'ignore' }).status !== 0) return { why: 'python3 is not installed' };
  if (!existsSync(python) && spawnSync('python3', ['-m', 'venv', venv], { stdio: 'ignore' }).status !== 0)
    return { why: 'python3 -m venv failed' };
  const pip = spawnSync(python, ['-m', 'pip', 'install', '--retries', '0', '--timeout', '5', '-q', 'mcp'], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (pip.status !== 0) return { why: `pip could not install the mcp package: ${(pip.stderr ?? '').trim().split('\n').pop()}` };
  return { python };
}
