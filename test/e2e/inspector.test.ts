// The README's MCP Inspector command lines, run as written (under Node 22, in a fresh directory, with the built server):
// the first writes a key into a SQLite file, the second, a new server process, reads it back.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { CLI } from '../helpers.js';
import { INSPECTOR, missing, NODE22 } from './node22.js';

const why = missing(INSPECTOR);
if (why) console.warn(`[Inspector tests skipped] ${why}`);
const README = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
const LINES = README.split('\n').filter((line) => line.startsWith('npx @modelcontextprotocol/inspector --cli '));

/** A README line's words, as a shell would split them (single quotes only), with npx and the server made local. */
function argv(line: string): string[] {
  const words = [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]);
  expect(words.slice(0, 2)).toEqual(['npx', '@modelcontextprotocol/inspector']);
  const server = words.indexOf('--');
  expect(words.slice(server + 1, server + 3)).toEqual(['node', 'dist/cli.js']);
  return [INSPECTOR, ...words.slice(2, server + 1), process.execPath, CLI, ...words.slice(server + 3)];
}

describe.skipIf(why !== undefined)(`the README's MCP Inspector command lines${why ? ` (skipped: ${why})` : ''}`, () => {
  it('write a key with one server process and read it back with another', () => {
    expect(LINES).toHaveLength(2);
    const dir = tempDir();
    const run = (line: string) => {
      const out = spawnSync(NODE22, argv(line), { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { ...process.env, HOME: dir } });
      expect(out.status, out.stderr).toBe(0);
      return JSON.parse(out.stdout) as { structuredContent: Record<string, unknown>; isError?: boolean };
    };
    const set = run(LINES[0]);
    expect(set.isError).toBeFalsy();
    expect(set.structuredContent).toMatchObject({ version: 1 });
    const got = run(LINES[1]);
    expect(got.structuredContent).toMatchObject({ found: true, value: 'hello', version: 1, updatedBy: expect.any(String) });
  });
});
