import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Tests that measure an acceptance figure against the clock (the board at 10,000 keys: a write on the page within a
 * second, no long task over 200 ms). On a 2-core machine a neighbouring test file's servers would take their CPU, so
 * they run one at a time after everything else.
 */
const MEASURED = ['test/e2e/ui-scale.test.ts'];

export default defineConfig({
  test: {
    // Starts throwaway Postgres/Redis servers found installed, exports their URLs, and stops them at the end.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ['default', 'json'],
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
