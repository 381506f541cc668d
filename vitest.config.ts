import { defineConfig } from 'vitest/config';

/**
 * Two tiers (CONTRIBUTING.md, "Tests"): `unit` runs in the test process only (no child process,
 * PostgreSQL or browser; test/helpers/unit-tier-guard.ts refuses child processes there), `system`
 * is every file named `*.system.test.ts` (separate processes, PostgreSQL, Chromium, HAProxy, chaos,
 * the README walk-throughs). A bare `vitest run` (what `npm test` runs) runs the unit group first,
 * then the system group, in one run with one report.
 */
const SYSTEM = ['test/**/*.system.test.ts', 'devices/**/*.system.test.ts'];

export default defineConfig({
  test: {
    // Tests start real servers, databases and child processes; two workers match the CI box.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // CI reads the counts from a JSON report; people read the default output.
    reporters: process.env.VITEST_JSON_REPORT ? ['default', 'json'] : ['default'],
    outputFile: process.env.VITEST_JSON_REPORT ? { json: process.env.VITEST_JSON_REPORT } : undefined,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts', 'devices/**/*.test.ts'],
          exclude: SYSTEM,
          setupFiles: ['test/helpers/unit-tier-guard.ts', 'test/helpers/leftovers.ts'],
          // The files of a worker share one module graph instead of each importing the ~400 modules
          // of the daemon again (most of the tier's time before, docs/decisions/0110-test-tiers.md).
          // A file must leave no state behind in a module for the next one: its daemons stopped,
          // its listeners removed.
          isolate: false,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: { name: 'system', include: SYSTEM, setupFiles: ['test/helpers/leftovers.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
