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
  it('team.mjs: a lead and three worker processes split a plan; the lead redirects one mid-step, a worker asks and gets an answer', async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'team.mjs')], { timeout: 120_000 });
    expect(stdout).toMatch(/lead: created plan-[0-9a-f]{12} with 6 steps/);
    const away = /lead: redirected w2 away from (s\d)/.exec(stdout)![1];
    expect(stdout).toContain(`w2: redirected mid-step ${away}: gave it back and checked the sources`);
    expect(stdout).toContain('lead: answered w3: question: which format for the results?');
    expect(stdout).toContain('w3: asked the lead, answer: JSON, one file per quarter');
    // every step completed once, each by the worker the plan names
    const owners = Object.fromEntries(
      /lead: completed: (.*)/
        .exec(stdout)![1]
        .split(' ')
        .map((pair) => pair.split('=')),
    );
    expect(Object.keys(owners).sort()).toEqual(['s1', 's2', 's3', 's4', 's5', 's6']);
    for (const [step, owner] of Object.entries(owners))
      expect(stdout.match(new RegExp(`${owner}: completed ${step}$`, 'gm'))).toHaveLength(1);
  }, 150_000);

  it('two-agents.mjs: a planner and a worker process coordinate through one SQLite file', async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'two-agents.mjs')], { timeout: 30_000 });
    expect(stdout).toContain('worker: got task "find the answer" at version 1');
    expect(stdout).toContain('planner: result {"answer":42}');
  });

  it("delegation.mjs: a child process spends the parent's budget and answers once; the parent waits for it", async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'delegation.mjs')], { timeout: 30_000 });
    expect(stdout).toContain('child: step 3, 0 left');
    expect(stdout).toContain('child: step 4 refused: LIMIT_REACHED');
    expect(stdout).toContain('child: second answer refused: MULTIPLE_FINAL_ANSWERS');
    expect(stdout).toContain('parent: answer from child-7: The test raced the cache warm-up.');
    expect(stdout).toContain('parent: iterations used 3/3 (counted from the child)');
  });

  it("work-queue.mjs: workers claim and finish a plan's steps, each once, blockers first; a killed worker's step is finished by another", async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'work-queue.mjs')], { timeout: 60_000 });
    expect(stdout).toMatch(/planner: created plan-[0-9a-f]{12} with 5 steps/);
    const dropped = /worker-c: claimed (s\d) and was killed while working on it/.exec(stdout)![1];
    expect(stdout).toMatch(new RegExp(`worker-[ab]: finished ${dropped} after its earlier claim lapsed \\(1 lapsed\\)`));
    expect(stdout).toContain('planner: all 5 steps completed, each by one worker');
    const order = /order: (.*)/.exec(stdout)![1].split(' ');
    expect([...order].sort()).toEqual(['s1', 's2', 's3', 's4', 's5']);
    // s3 and s4 wait for s2; s5 for s1, s3 and s4
    for (const [step, blockers] of [
      ['s3', ['s2']],
      ['s4', ['s2']],
      ['s5', ['s1', 's3', 's4']],
    ] as const) {
      for (const blocker of blockers) expect(order.indexOf(blocker), `${blocker} before ${step}`).toBeLessThan(order.indexOf(step));
    }
    expect(stdout).toMatch(/s5 completed by worker-[ab]: publish/);
  });

  it('orchestrator.mjs: the library from code; two worker processes share a plan, the orchestrator waits for their answers', async () => {
    const { stdout, stderr } = await run(process.execPath, [join(examples, 'orchestrator.mjs')], { timeout: 60_000 });
    expect(stdout).toMatch(/orchestrator: created plan-[0-9a-f]{12} with 4 steps/);
    expect(stdout).toContain('orchestrator: plan completed, 4 results');
    // Each city once, whichever worker took it; both workers answered.
    const described = [...stdout.matchAll(/worker said "(worker-[12]) described (.*)"/g)].map((m) => [m[1], m[2]]);
    expect(described.map(([w]) => w).sort()).toEqual(['worker-1', 'worker-2']);
    expect(
      described
        .flatMap(([, cities]) => cities.split(', '))
        .filter((c) => c !== 'nothing')
        .sort(),
    ).toEqual(['Hanoi', 'Lisbon', 'Oslo', 'Quito']);
    expect(stdout).toMatch(
      /orchestrator: final answer: Lisbon \(by worker-[12]\)\. Oslo \(by worker-[12]\)\. Quito .* Hanoi \(by worker-[12]\)\./,
    );
    // The change feed saw every result as it was written.
    expect([...stderr.matchAll(/saw result\/(\w+)/g)].map((m) => m[1]).sort()).toEqual(['Hanoi', 'Lisbon', 'Oslo', 'Quito']);
  });

  it("ai-sdk.mjs: the Vercel AI SDK's MCP client connects in-process to createBlackboardServer", async () => {
    const { stdout } = await run(process.execPath, [join(examples, 'ai-sdk.mjs')], { timeout: 30_000 });
    expect(stdout).toMatch(/ai-sdk: \d+ tools, e\.g\. state_get, state_set, state_delete/);
    expect(stdout).toContain('ai-sdk: state_set -> {"version":1,"revision":');
    expect(stdout).toContain('ai-sdk: second state_set -> VERSION_CONFLICT');
    expect(stdout).toContain('library: greeting = "hello from the AI SDK" (by assistant)');
  });
});
