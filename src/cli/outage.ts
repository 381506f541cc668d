import { Command, InvalidArgumentError } from 'commander';
import { printJson, withDataOptions, type DataOptions } from './common.js';
import { withContext } from './terminals.js';
import { localStamp as t, zoneName } from '../modules/ops/time.js';

const whole = (v: string) => {
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('expected a whole number ≥ 1');
  return Number(v);
};
const money = (cents: number, currency: string) => `${currency} ${(cents / 100).toFixed(2)}`;

/**
 * `posd outage report`: the recovery checklist of each recent outage (sales by method, stored card
 * payments by state, declined-later sales to collect, checkouts left open, reconciliation), read
 * from the database alone, so it works beside a running daemon or with it stopped.
 */
export function outageCommand(): Command {
  const cmd = new Command('outage').description('outages of the link to the central or the card processor, and what to do after one');
  withDataOptions(cmd.command('report'))
    .description('one report per outage, newest first (docs/stored-payments.md)')
    .option('--since <datetime>', 'only outages still going on at or after this ISO 8601 time')
    .option('--limit <n>', 'how many outages (default 5)', whole)
    .option('--json', 'print JSON: {offline_now, outages: [...]}')
    .action(async (opts: DataOptions & { since?: string; limit?: number; json?: boolean }) => {
      const { outageNow, outageReports } = await import('../modules/ops/outage.js');
      await withContext(opts, (ctx) => {
        const report = { offline_now: outageNow(ctx), outages: outageReports(ctx, { from: opts.since, limit: opts.limit ?? 5 }) };
        if (opts.json) return printJson(report);
        // Local times, as the page shows them, the zone named once; the JSON keeps ISO UTC.
        const out: string[] = [`Times in ${zoneName(Date.now())}.`];
        const now = report.offline_now;
        if (now.offline) {
          out.push(
            `OFFLINE since ${now.since ? t(now.since) : 'unknown'} (${now.links.map((l) => l.link).join(', ')}); ${now.records_waiting} record(s) waiting for the central`,
          );
          for (const s of now.stored) out.push(`  waiting ${s.status}: ${s.count} (${money(s.amount_in_cents, s.currency)})`);
          if (now.next_deadline) out.push(`  oldest stored payment must be forwarded by ${t(now.next_deadline)}`);
        }
        if (report.outages.length === 0) out.push('No outage recorded.');
        for (const o of report.outages) {
          out.push('', `Outage ${t(o.started_at)} to ${o.ended_at ? t(o.ended_at) : 'now'} (${o.links.map((l) => l.link).join(', ')})`);
          for (const s of o.sales) out.push(`  sales ${s.method}: ${s.count} (${money(s.amount_in_cents, s.currency)})`);
          for (const k of o.taken_offline) out.push(`  taken offline on terminal ${k.terminal_id}: ${k.count} (${money(k.amount_in_cents, k.currency)})`);
          for (const s of o.stored_payments) out.push(`  stored payments ${s.status}: ${s.count} (${money(s.amount_in_cents, s.currency)})`);
          // Every field the JSON has for a sale to collect: the manager works from this text alone.
          for (const c of o.to_collect) {
            const who = [c.customer?.full_name, c.customer?.phone, c.customer?.email, c.customer?.tax_id ?? c.tax_id].filter(Boolean).join(', ');
            const card = c.card.last4 ? `${c.card.network ?? 'card'} ••${c.card.last4}` : 'card unknown';
            out.push(
              `  to collect: ${c.external_id ?? c.command_id}${c.description ? ` "${c.description}"` : ''} ${money(c.amount_in_cents, c.currency)}`,
              `    ${c.status}${c.reason ? ` (${c.reason})` : ''}${c.settled_at ? ` at ${t(c.settled_at)}` : ''}; ${card}; terminal ${c.terminal_id}`,
              `    checkout ${c.checkout_id} ${c.checkout_status ?? 'gone'}${c.payment_intent_id ? `, payment intent ${c.payment_intent_id}` : ''}${who ? `; ${who}` : ''}`,
            );
          }
          out.push(`  checkouts left open (besides those to collect): ${o.open_checkouts.total}`);
          for (const c of o.open_checkouts.items) out.push(`    ${c.id} ${c.status} ${money(c.amount_in_cents, c.currency)} since ${t(c.created_at)}`);
          out.push(`  reconciliation: ${o.reconciliation.state}`);
        }
        process.stdout.write(`${out.join('\n')}\n`);
      });
    });
  return cmd;
}
