import { Command } from 'commander';
import { CliError, cliConfig, cliConfigInRole, printJson, withDataOptions, type DataOptions } from './common.js';
import { runDoctor } from '../modules/ops/doctor.js';

export function doctorCommand(): Command {
  return withDataOptions(new Command('doctor'))
    .description('check the data folder, disk, database, clock and terminal links; says what to do about each problem')
    .option('--json', 'print the checks as JSON')
    .action(async (opts: DataOptions & { json?: boolean }) => {
      const plain = cliConfig(opts);
      // A missing or unreadable database is doctor's to report, not a reason to stop before it.
      let config = plain;
      try {
        config = cliConfigInRole(opts);
      } catch {
        /* reported by the database checks */
      }
      // A central-front has no data folder: its checks are PostgreSQL's (src/front.ts).
      const checks = plain.role === 'central-front' ? await (await import('../front.js')).frontDoctor(plain) : await runDoctor(config);
      const problems = checks.filter((c) => !c.ok);
      if (opts.json) printJson({ ok: problems.length === 0, checks });
      else {
        const width = Math.max(...checks.map((c) => c.name.length));
        for (const c of checks) {
          process.stdout.write(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(width)}  ${c.detail}\n`);
          if (c.fix) process.stdout.write(`      ${' '.repeat(width)}  -> ${c.fix}\n`);
        }
        process.stdout.write(problems.length ? `${problems.length} problem(s) found\n` : 'no problems found\n');
      }
      if (problems.length) throw new CliError('', 1);
    });
}
