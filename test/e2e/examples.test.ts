import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const examples = join(import.meta.dirname, '..', '..', 'examples');

describe('examples run as documented', () => {
  it('two-agents.mjs: a planner and a worker process coordinate through one SQLite file', async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'two-agents.mjs')], { timeout: 30_000 });
    expect(stdout).toContain('worker: got task "find the answer" at version 1');
    expect(stdout).toContain('planner: result {"answer":42}');
  });
});
