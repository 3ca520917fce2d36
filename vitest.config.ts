import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Tests that measure an acceptance figure against the clock (the board at 10,000 keys: a write on the page within a
 * second, no long task over 200 ms). On a 2-core machine a neighbouring test file's servers would take their CPU, so
 * they run one at a time after everything else.
 */
const MEASURED = ['test/e2e/ui-scale.test.ts'];

/**
 * The files that take a minute or more of a worker in CI (most of it waiting on spawned servers, faults and long
 * waits), about longest first. A fresh clone has no timings from an earlier run, and vitest then starts the largest files
 * first: `long-wait` (90 s, a small file) started last and ran alone at the end.
 */
const LONG = [
  'test/e2e/team-scale.test.ts',
  // mostly waiting: beside the busiest
  'test/e2e/long-wait.test.ts',
  'test/e2e/claims-multiprocess.test.ts',
  'test/faults/link-resets.test.ts',
  'test/faults/link-partition.test.ts',
  'test/e2e/team-delivery.test.ts',
  'test/tools/checkpoint-model.test.ts',
];
for (const file of LONG) if (!existsSync(join(import.meta.dirname, file))) throw new Error(`vitest.config.ts: no ${file}`);

/** Vitest's own order (groups, then earlier timings or size), with the long files moved to the front of their group. */
class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = LONG.indexOf(relative(spec.project.config.root, spec.moduleId));
      return at < 0 ? LONG.length : at;
    };
    const group = new Map<string, number>();
    for (const [i, spec] of sorted.entries()) if (!group.has(spec.project.name)) group.set(spec.project.name, i);
    return sorted
      .map((spec, i) => ({ spec, i }))
      .sort((a, b) => group.get(a.spec.project.name)! - group.get(b.spec.project.name)! || rank(a.spec) - rank(b.spec) || a.i - b.i)
      .map(({ spec }) => spec);
  }
}

export default defineConfig({
  test: {
    // Starts throwaway Postgres/Redis servers found installed, exports their URLs, and stops them at the end.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ['default', 'json'],
    sequence: { sequencer: LongFirst },
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...MEASURED],
          // Multi-process tests spawn servers; two workers fit the 2-core machine.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'measured', include: MEASURED, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
