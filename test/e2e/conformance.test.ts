// The MCP conformance suite (@modelcontextprotocol/conformance, under Node 22) against a real HTTP server: every
// scenario that applies to a state server passes; the ones that test the reference server's fixtures are listed, with
// why, in test/fixtures/conformance-expected-failures.yml, and the suite fails the run if one of them starts passing.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { startHttp, type Served } from './http-helpers.js';
import { CONFORMANCE, missing, NODE22 } from './node22.js';

const why = missing(CONFORMANCE);
if (why) console.warn(`[conformance suite skipped] ${why}`);
const BASELINE = join(import.meta.dirname, '..', 'fixtures', 'conformance-expected-failures.yml');

/** Runs the suite's `server` command; resolves with its exit code and output. */
function conformance(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE22, [CONFORMANCE, 'server', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

describe.skipIf(why !== undefined)(`the MCP conformance suite${why ? ` (skipped: ${why})` : ''}`, () => {
  let s: Served;
  beforeAll(async () => {
    s = await startHttp({}, { tools: ['all'] });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('passes every scenario that applies, and only the fixture scenarios of the baseline fail', async () => {
    const { code, out } = await conformance(['--url', `${s.base}/mcp`, '--expected-failures', BASELINE, '-o', tempDir()]);
    expect(out).toContain('Baseline check passed');
    expect(code, out).toBe(0);
    // the protocol scenarios ran and passed (not skipped)
    for (const scenario of [
      'server-initialize',
      'ping',
      'logging-set-level',
      'tools-list',
      'tools-call-error',
      'resources-list',
      'server-sse-multiple-streams',
      'dns-rebinding-protection',
    ]) {
      expect(out).toMatch(new RegExp(`✓ ${scenario}: [1-9]\\d* passed, 0 failed`));
    }
  });
});
