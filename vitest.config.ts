import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'devices/**/*.test.ts'],
    // Tests start real servers, databases and child processes; two workers match the CI box.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // CI reads the counts from a JSON report; people read the default output.
    reporters: process.env.POSD_VITEST_JSON ? ['default', 'json'] : ['default'],
    outputFile: process.env.POSD_VITEST_JSON ? { json: process.env.POSD_VITEST_JSON } : undefined,
  },
});
