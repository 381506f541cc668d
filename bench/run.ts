import type { BenchResult } from './lib.js';

/**
 * `npm run bench`: every scenario beside its raw baseline measured in the same run, printed as a
 * ratio. Targets are printed, never asserted: a slow CI box must not fail the build.
 * `npm run bench -- account` runs only the scenarios whose module name matches.
 */
const SCENARIOS: Record<string, () => Promise<{ run(): Promise<BenchResult[]> }>> = {
  startup: () => import('./startup.js'),
  account: () => import('./account.js'),
  tls: () => import('./tls.js'),
  'cash-sales': () => import('./cash-sales.js'),
  transfers: () => import('./transfers.js'),
  webhooks: () => import('./webhooks.js'),
  terminals: () => import('./terminals.js'),
  // A nexo terminal (the simulator) over HTTPS with NexoCrypto, beside a bare sealed HTTPS round trip.
  'terminals-nexo': () => import('./terminals-nexo.js'),
  // GET /api/account while one paired terminal floods its link (issue 32's frame budget).
  'terminal-flood': () => import('./terminal-flood.js'),
  bookings: () => import('./bookings.js'),
  'shipping-quote': () => import('./shipping-quote.js'),
  backup: () => import('./backup.js'),
  // Each list's first page at 1,000,000 rows beside an empty box (the seed takes a minute or two).
  lists: () => import('./lists.js'),
  // Every write path under 0, 2 and 5 ms of injected flush latency (strace), a few minutes.
  flush: () => import('./flush.js'),
  // A store's small push at a central holding 200,000 records of its history, beside an empty central.
  central: () => import('./central.js'),
  // Push receipt on PostgreSQL by 1 and 3 fronts beside the raw unnest insert (a throw-away cluster).
  'central-pg': () => import('./central-pg.js'),
  // The chain's core applying what fronts received, beside a SQLite central's projector (a throw-away cluster).
  'central-pg-core': () => import('./central-pg-core.js'),
  // One central and N = 1, 10, 50 store processes catching up at once (a few minutes).
  chain: () => import('./chain.js'),
  // The chain on PostgreSQL: two cores on one log, two fronts, HAProxy; a front and the leader killed (issue 33).
  'chain-pg': () => import('./chain-pg.js'),
  // Last: 100,000 offline sales drained to a central takes about a minute.
  sync: () => import('./sync.js'),
};

function fmt(n: number): string {
  return Number.isInteger(n) || Math.abs(n) >= 100 ? Math.round(n).toString() : n.toFixed(2);
}

function describe(values: Record<string, number>): string {
  return Object.entries(values)
    .map(([k, v]) => `${k} ${fmt(v)}`)
    .join(', ');
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const results: BenchResult[] = [];
  for (const [name, loadScenario] of Object.entries(SCENARIOS)) {
    if (only.length && !only.some((o) => name.includes(o))) continue;
    process.stdout.write(`running ${name} ...\n`);
    try {
      const mod = await loadScenario();
      for (const r of await mod.run()) {
        results.push(r);
        process.stdout.write(
          `  ${r.scenario}\n    posd:     ${describe(r.metrics)}\n    baseline: ${describe(r.baseline)}\n    ratio ${r.ratio.toFixed(2)} (target ${r.target})\n`,
        );
      }
    } catch (err) {
      process.stdout.write(`  ${name} failed: ${(err as Error).message}\n`);
      process.exitCode = 1;
    }
  }
  process.stdout.write('\nsummary\n');
  for (const r of results) process.stdout.write(`  ${r.ratio.toFixed(2)}  ${r.scenario} (target ${r.target})\n`);
}

main();
