import { Command, InvalidArgumentError } from 'commander';
import { printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import { accountOf, withContext } from './terminals.js';

const outcomeArg = (v: string) => {
  if (v !== 'succeeded' && v !== 'cancelled') throw new InvalidArgumentError('expected succeeded (release) or cancelled');
  return v;
};

async function transfers() {
  return import('../modules/transfers/service.js');
}

/**
 * `posd transfers held|review`: the reviewer's side of transfers held for review (above
 * `money.transfer_review_above_in_cents`, docs/transfers.md). Works beside a running daemon: the
 * decision, its ledger rows and its events commit to the database the daemon delivers from.
 */
export function transfersCommand(): Command {
  const cmd = new Command('transfers').description('transfers held for review: list them, release or cancel one');

  withDataOptions(cmd.command('held'))
    .description("an account's transfers waiting in review, newest first")
    .requiredOption('--account <id>', 'the sending account (live or sandbox id)')
    .option('--json', 'print JSON')
    .action(async (opts: DataOptions & { account: string; json?: boolean }) => {
      const t = await transfers();
      await withContext(opts, (ctx, accounts) => {
        const account = accountOf(accounts, opts.account);
        const { rows } = t.listTransfers(ctx, { accountIds: [account.id], liveMode: account.live_mode }, { kind: 'peer', status: 'in_review' }, 1000, 0);
        if (opts.json) return printJson(rows);
        printTable(rows as never, ['id', 'amount_in_cents', 'currency', 'recipient_id', 'note', 'created_at']);
      });
    });

  withDataOptions(cmd.command('review'))
    .description('release (succeeded) or cancel a transfer in review')
    .argument('<id>', 'the transfer (tr_...)')
    .requiredOption('--account <id>', 'the sending account (live or sandbox id)')
    .requiredOption('--outcome <outcome>', 'succeeded (release: the recipient is credited) or cancelled (the money returns)', outcomeArg)
    .option('--reason <text>', 'why it was cancelled (failure_reason; default rejected_in_review)')
    .action(async (id: string, opts: DataOptions & { account: string; outcome: 'succeeded' | 'cancelled'; reason?: string }) => {
      const t = await transfers();
      await withContext(opts, (ctx, accounts) => {
        const account = accountOf(accounts, opts.account);
        printJson(t.reviewTransfer(ctx, { accountIds: [account.id], liveMode: account.live_mode }, id, opts.outcome, opts.reason));
      });
    });

  return cmd;
}
