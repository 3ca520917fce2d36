// The Python MCP SDK client (pip package `mcp`) over stdio and HTTP, in a virtualenv of its own. When Python or the
// package cannot be had on this machine, the tests are skipped and say why.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI } from '../helpers.js';
import { startHttp, type Served } from './http-helpers.js';

const SCRIPT = join(import.meta.dirname, '..', 'fixtures', 'python-client.py');
const VENV = join(tmpdir(), 'mcp-blackboard-python-client');
const PYTHON = join(VENV, 'bin', 'python');

/** Why the Python client cannot run here, or undefined when it can. */
function prepare(): string | undefined {
  if (spawnSync(PYTHON, ['-c', 'import mcp'], { stdio: 'ignore' }).status === 0) return undefined;
  if (spawnSync('python3', ['--version'], { stdio: 'ignore' }).status !== 0) return 'python3 is not installed';
  if (!existsSync(PYTHON) && spawnSync('python3', ['-m', 'venv', VENV], { stdio: 'ignore' }).status !== 0) return 'python3 -m venv failed';
  const pip = spawnSync(PYTHON, ['-m', 'pip', 'install', '--retries', '0', '--timeout', '5', '-q', 'mcp'], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  return pip.status === 0 ? undefined : `pip could not install the mcp package: ${(pip.stderr ?? '').trim().split('\n').pop()}`;
}
const why = prepare();
if (why) console.warn(`[python client tests skipped] ${why}`);

const run = (...args: string[]): Record<string, any> => {
  const out = spawnSync(PYTHON, [SCRIPT, ...args], { encoding: 'utf8', timeout: 120_000 });
  if (out.status !== 0) throw new Error(`python client failed: ${out.stderr}`);
  return JSON.parse(out.stdout.trim().split('\n').pop()!);
};

describe.skipIf(why !== undefined)(`the Python mcp client${why ? ` (skipped: ${why})` : ''}`, () => {
  let s: Served;
  beforeAll(async () => {
    s = await startHttp();
  });
  afterAll(async () => {
    await s?.close();
  });

  it('over stdio', () => {
    const out = run('stdio', process.execPath, CLI, '--store', 'memory://');
    expect(out.got).toMatchObject({ found: true, value: { from: 'python' }, version: 1 });
    expect(out.tools).toBeGreaterThan(5);
  });

  it('over HTTP', async () => {
    const { spawn } = await import('node:child_process');
    // run asynchronously: the HTTP server lives in this process
    const out = await new Promise<Record<string, any>>((resolve, reject) => {
      const child = spawn(PYTHON, [SCRIPT, 'http', `${s.base}/mcp`], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(stdout.trim().split('\n').pop()!)) : reject(new Error(stderr))));
    });
    expect(out.got).toMatchObject({ found: true, value: { from: 'python' }, version: 1 });
  });
});
