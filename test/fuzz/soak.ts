import { parseArgs } from 'node:util';
import { fuzzDaemon } from './daemon.js';
import { describeFailures, fuzz } from './run.js';

/**
 * `npm run soak [-- --seed N --requests N --concurrency N]`: the fuzz suite of `npm test`, longer
 * (100,000 requests by default) and with any seed, against a fresh daemon in a temp folder. Prints
 * the seed first so a failing run can be replayed; exits 1 on any failure.
 */
async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string' },
      requests: { type: 'string', default: '100000' },
      concurrency: { type: 'string', default: '8' },
    },
  });
  const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  const requests = Number(values.requests);
  const concurrency = Number(values.concurrency);
  if (![seed, requests, concurrency].every((n) => Number.isInteger(n) && n >= 0) || requests === 0 || concurrency === 0) {
    console.error('soak: --seed, --requests and --concurrency take whole numbers (requests and concurrency at least 1)');
    return 2;
  }
  console.log(`soak: seed ${seed}, ${requests} requests, ${concurrency} at once`);
  const { server, target } = await fuzzDaemon();
  try {
    const report = await fuzz(target, { seed, requests, concurrency, maxFailures: 200 });
    console.log(
      `soak: ${report.sent} answers over ${report.operations} operations in ${(report.elapsedMs / 1000).toFixed(1)} s, slowest ${report.slowestMs} ms, by status ${JSON.stringify(report.byStatus)}`,
    );
    if (report.failures.length > 0) {
      console.error(`soak: ${report.failures.length} failures (seed ${seed}):\n${describeFailures(report)}`);
      return 1;
    }
    console.log('soak: no 5xx, every error in the catalogue, no answer over 5 s, daemon alive, no stack logged');
    return 0;
  } finally {
    await server.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
