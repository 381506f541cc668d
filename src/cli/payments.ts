import { Command, InvalidArgumentError } from 'commander';
import { userInfo } from 'node:os';
import { CliError, printJson, printTable, withDataOptions, type DataOptions } from './common.js';
import { accountOf, withContext } from './terminals.js';
import { tx } from '../db/database.js';
import type { AppContext } from '../context.js';
import { managerByName, managerCount } from '../modules/ops/managers.js';

const cents = (v: string) => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a whole number of cents');
  return Number(v);
};
const whole = cents;
const yesNo = (v: string) => {
  if (v !== 'yes' && v !== 'no') throw new InvalidArgumentError('expected yes or no');
  return v === 'yes';
};

type CapOpts = { maxPayment?: number; maxTotal?: number; maxCount?: number; maxAgeHours?: number };

function withCapOptions(cmd: Command): Command {
  return cmd
    .option('--max-payment <cents>', 'largest single stored payment', cents)
    .option('--max-total <cents>', 'what stored payments may add up to', cents)
    .option('--max-count <n>', 'how many payments may wait stored', whole)
    .option('--max-age-hours <h>', 'how long a stored payment may wait to be forwarded (1 to 168)', whole);
}

function capsFrom(o: CapOpts) {
  return { max_payment_in_cents: o.maxPayment, max_total_in_cents: o.maxTotal, max_count: o.maxCount, max_age_hours: o.maxAgeHours };
}

/**
 * Who made a change from the shell. Once the box has named managers, `--by` must name one of them,
 * so every override in the audit names a person the page and the API know; a box with none yet
 * records `--by`, else the login name.
 */
function actor(ctx: AppContext, by: string | undefined): string {
  if (managerCount(ctx.db) === 0) return by ?? `shell:${userInfo().username}`;
  if (!by) throw new CliError('--by <manager> is required: name the manager making this change (posd managers list)');
  const manager = managerByName(ctx.db, by);
  if (!manager) throw new CliError(`--by ${by}: no manager of that name on this box (posd managers list)`);
  return manager.name;
}

async function stored() {
  return {
    ...(await import('../modules/terminals/stored/policy.js')),
    ...(await import('../modules/terminals/stored/changes.js')),
    ...(await import('../modules/terminals/stored/service.js')),
  };
}

/**
 * `posd payments offline ...`: the caps of stored (store-and-forward) card payments, a manager's
 * override, and the audit of every change. Works beside a running daemon: it re-reads the policy
 * within seconds and tells the terminals.
 */
export function paymentsCommand(): Command {
  const cmd = new Command('payments').description('card payments taken while offline (stored payments): caps, overrides, audit');
  const offline = cmd.command('offline').description('stored (store-and-forward) card payments; see docs/stored-payments.md');

  withDataOptions(offline.command('show'))
    .description("an account's caps in force, its override if any, and what it holds stored (--terminal: that terminal's too)")
    .requiredOption('--account <id>', 'account')
    .option('--terminal <id>', "also this terminal's own caps, and what it may store now")
    .option('--json', 'print JSON')
    .action(async (opts: DataOptions & { account: string; terminal?: string; json?: boolean }) => {
      const s = await stored();
      await withContext(opts, (ctx, accounts) => {
        const account = accountOf(accounts, opts.account);
        const terminal = opts.terminal ?? null;
        const view = {
          caps: s.capsOf(ctx, account),
          terminal_caps: terminal ? s.terminalCapsOf(ctx, terminal) : null,
          override: s.activeOverrideOf(ctx, account) ?? null,
          policy: s.policyOf(ctx, account, terminal),
        };
        if (opts.json) return printJson(view);
        process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
      });
    });

  withDataOptions(withCapOptions(offline.command('caps')))
    .description("set an account's standing caps, or with --terminal that terminal's own beside them (audited)")
    .requiredOption('--account <id>', 'account')
    .requiredOption('--reason <text>', 'why (kept in the audit)')
    .option('--terminal <id>', "set this terminal's own caps (the tighter of its and its account's apply)")
    .option('--allowed <yes|no>', 'stored payments allowed at all', yesNo)
    .option('--by <name>', 'the named manager making the change (required once the box has managers; see posd managers)')
    .action(async (opts: DataOptions & CapOpts & { account: string; reason: string; terminal?: string; allowed?: boolean; by?: string }) => {
      const s = await stored();
      const { findTerminal } = await import('../modules/terminals/service.js');
      await withContext(opts, (ctx, accounts) => {
        const account = accountOf(accounts, opts.account);
        const change = { actor: actor(ctx, opts.by), reason: opts.reason };
        if (opts.terminal) {
          const terminal = opts.terminal;
          if (!findTerminal(ctx, { accountIds: [account.id], liveMode: account.live_mode }, terminal))
            throw new CliError(`no terminal ${terminal} of account ${account.id}`);
          return printJson(tx(ctx.db, () => s.setTerminalCaps(ctx, account, terminal, { ...capsFrom(opts), allowed: opts.allowed }, change)));
        }
        const after = tx(ctx.db, () => s.setAccountCaps(ctx, account, { ...capsFrom(opts), allowed: opts.allowed }, change));
        printJson(after);
      });
    });

  withDataOptions(withCapOptions(offline.command('allow')))
    .description('manager override: allow stored payments (and raise the caps given) until a time (audited)')
    .requiredOption('--account <id>', 'account')
    .requiredOption('--until <datetime>', 'ISO 8601 end of the override, at most 7 days ahead')
    .requiredOption('--reason <text>', 'why (kept in the audit)')
    .option('--by <name>', 'the named manager making the change (required once the box has managers; see posd managers)')
    .action(async (opts: DataOptions & CapOpts & { account: string; until: string; reason: string; by?: string }) => {
      const s = await stored();
      await withContext(opts, (ctx, accounts) => {
        const account = accountOf(accounts, opts.account);
        printJson(tx(ctx.db, () => s.allowOfflineUntil(ctx, account, opts.until, capsFrom(opts), { actor: actor(ctx, opts.by), reason: opts.reason })));
      });
    });

  withDataOptions(offline.command('revoke'))
    .description('end the override in force (audited)')
    .requiredOption('--account <id>', 'account')
    .requiredOption('--reason <text>', 'why (kept in the audit)')
    .option('--by <name>', 'the named manager making the change (required once the box has managers; see posd managers)')
    .action(async (opts: DataOptions & { account: string; reason: string; by?: string }) => {
      const s = await stored();
      await withContext(opts, (ctx, accounts) => {
        const account = accountOf(accounts, opts.account);
        const n = tx(ctx.db, () => s.revokeOfflineOverrides(ctx, account, { actor: actor(ctx, opts.by), reason: opts.reason }));
        if (n === 0) throw new CliError('no override in force');
        process.stdout.write(`revoked ${n}\n`);
      });
    });

  withDataOptions(offline.command('audit'))
    .description('every change of the offline policy: who, when, why, before and after')
    .requiredOption('--account <id>', 'account')
    .option('--json', 'print JSON')
    .action(async (opts: DataOptions & { account: string; json?: boolean }) => {
      const s = await stored();
      await withContext(opts, (ctx, accounts) => {
        const rows = s.offlineAudit(ctx, accountOf(accounts, opts.account));
        if (opts.json) return printJson(rows);
        printTable(rows.map((r) => ({ ...r, terminal_id: r.terminal_id ?? '-', after: JSON.stringify(r.after) })) as never, [
          'at',
          'action',
          'terminal_id',
          'actor',
          'reason',
          'after',
        ]);
      });
    });

  withDataOptions(offline.command('flagged'))
    .description('stored payments the manager must look at: over a cap when they arrived, or a contradicting late outcome')
    .requiredOption('--account <id>', 'account')
    .option('--json', 'print JSON')
    .action(async (opts: DataOptions & { account: string; json?: boolean }) => {
      const s = await stored();
      await withContext(opts, (ctx, accounts) => {
        const rows = s.flaggedStoredPayments(ctx, accountOf(accounts, opts.account));
        if (opts.json) return printJson(rows);
        printTable(rows as never, ['id', 'terminal_id', 'command_id', 'status', 'amount_in_cents', 'over_cap', 'late_outcome', 'stored_at']);
      });
    });
  withDataOptions(offline.command('to-collect'))
    .description('sales whose stored card was declined or expired later: what the till gave, the customer, the amount, the terminal, the checkout')
    .requiredOption('--account <id>', 'account')
    .option('--all', 'also those paid since by other means')
    .option('--json', 'print JSON')
    .action(async (opts: DataOptions & { account: string; all?: boolean; json?: boolean }) => {
      const { salesToCollect } = await import('../modules/ops/outage.js');
      await withContext(opts, (ctx, accounts) => {
        const rows = salesToCollect(ctx, accountOf(accounts, opts.account), { owedOnly: !opts.all });
        if (opts.json) return printJson(rows);
        printTable(
          rows.map((c) => ({
            sale: c.external_id ?? c.command_id,
            amount: `${c.amount_in_cents} ${c.currency}`,
            outcome: c.reason ? `${c.status}: ${c.reason}` : c.status,
            terminal: c.terminal_id,
            checkout: `${c.checkout_id} ${c.checkout_status ?? 'gone'}`,
            customer: [c.customer?.full_name, c.customer?.phone, c.customer?.email, c.customer?.tax_id ?? c.tax_id].filter(Boolean).join(' · ') || '-',
          })) as never,
          ['sale', 'amount', 'outcome', 'terminal', 'checkout', 'customer'],
        );
      });
    });
  return cmd;
}
