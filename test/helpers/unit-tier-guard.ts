/**
 * Loaded before every unit-tier file (vitest.config.ts): a unit test runs in its own process only,
 * so starting a child process (a daemon, socat, openssl, PostgreSQL, a browser) fails at once with
 * the rule, rather than making the unit tier slow and machine-dependent without anyone noticing.
 * Such a test belongs in a file named `*.system.test.ts` (CONTRIBUTING.md, "Tests").
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';

const childProcess = createRequire(import.meta.url)('node:child_process') as Record<string, unknown>;
for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
  childProcess[name] = () => {
    throw new Error(`child_process.${name} in a unit-tier test: a test that starts processes is named *.system.test.ts (CONTRIBUTING.md)`);
  };
}
// ES module imports of node:child_process see the replaced functions too.
syncBuiltinESMExports();
