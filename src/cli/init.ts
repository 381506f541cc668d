import { Command, Option } from 'commander';
import { CliError, cliConfig, openCliDatabase, printJson, withDataOptions, type DataOptions } from './common.js';
import { AccountsService, initInstallation } from '../modules/accounts/service.js';

export function initCommand(): Command {
  return withDataOptions(new Command('init'))
    .description('create the installation: an organization with one live account, its sandbox and their keys')
    .addOption(new Option('--role <role>', 'store or central').choices(['store', 'central']).default('store'))
    .option('--name <name>', 'name of the organization and its first account', 'My store')
    .option('--json', 'print the ids and keys as one JSON object and nothing else')
    .action((opts: DataOptions & { role: 'store' | 'central'; name: string; json?: boolean }) => {
      const config = cliConfig(opts, { role: opts.role });
      const db = openCliDatabase(config);
      try {
        const accounts = new AccountsService(db, { now: () => Date.now() }, { unifiedSince: config.events.unified_since });
        if (accounts.isInitialised()) throw new CliError(`${config.data_dir} already holds an installation; nothing was changed`);
        const inst = initInstallation(accounts, {
          name: opts.name,
          role: opts.role,
          country: config.accounts.country,
          defaultCurrency: config.accounts.default_currency,
        });
        if (opts.json) return printJson(inst);
        process.stdout.write(
          [
            `posd: created a ${opts.role} installation in ${config.data_dir}`,
            `  organization  ${inst.organization_id}`,
            `  account       ${inst.account_id} (live), sandbox ${inst.sandbox_id}`,
            `  live key      ${inst.keys.live}`,
            `  test key      ${inst.keys.test}`,
            '  Keys are shown only now: store them somewhere safe.',
            '',
          ].join('\n'),
        );
      } finally {
        db.close();
      }
    });
}
