import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';

const examples = join(import.meta.dirname, '..', '..', 'examples');
// Each example runs with a temporary directory of its own, which must be empty again when it has finished.
let tmp = '';
const exec = promisify(execFile);
const run = (file: string, args: string[], options: { timeout: number }) => {
  tmp = tempDir();
  return exec(file, args, { ...options, env: { ...process.env, TMPDIR: tmp } });
};
afterEach(() => {
  if (tmp) expect(readdirSync(tmp), 'the example left files in the temp directory').toEqual([]);
  tmp = '';
});

describe('examples run as documented', () => {
  it('two-agents.mjs: a planner and a worker process coordinate through one SQLite file', async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'two-agents.mjs')], { timeout: 30_000 });
    expect(stdout).toContain('worker: got task "find the answer" at version 1');
    expect(stdout).toContain('planner: result {"answer":42}');
  });

  it('delegation.mjs: a child process spends the parent\'s budget and answers once; the parent waits for it', async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'delegation.mjs')], { timeout: 30_000 });
    expect(stdout).toContain('child: step 3, 0 left');
    expect(stdout).toContain('child: step 4 refused: LIMIT_REACHED');
    expect(stdout).toContain('child: second answer refused: MULTIPLE_FINAL_ANSWERS');
    expect(stdout).toContain('parent: answer from child-7: The test raced the cache warm-up.');
    expect(stdout).toContain('parent: iterations used 3/3 (counted from the child)');
  });
});
