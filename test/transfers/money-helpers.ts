import type { AppContext } from '../../src/context.js';
import { tx } from '../../src/db/database.js';
import { balancesFor, listBalanceTransactions, postBalanceTransaction } from '../../src/modules/ledger/service.js';

/** Puts money in a sandbox balance the way the ledger does it: one `adjustment` row. */
export function fund(ctx: AppContext, accountId: string, cents: number, currency = 'GTQ'): void {
  tx(ctx.db, () =>
    postBalanceTransaction(ctx, {
      accountId,
      liveMode: false,
      type: 'adjustment',
      amountInCents: cents,
      feeInCents: 0,
      currency,
      sourceId: 'test_funding',
      sourceType: 'test',
      description: 'test funding',
    }),
  );
}

/** The account's ledger rows in a currency, newest first (the ledger's own reading). */
export function ledgerRows(ctx: AppContext, accountId: string, currency = 'GTQ') {
  return listBalanceTransactions(ctx, { accountIds: [accountId], liveMode: false, currency }, 100, 0).rows;
}

export function available(ctx: AppContext, accountId: string, currency = 'GTQ'): number {
  return balancesFor(ctx, [accountId], false).find((b) => b.currency === currency)?.available_in_cents ?? 0;
}

/** gaps.md: amount + fee = net on every row, and each balance_after is the previous one plus net. */
export function chainHolds(rows: ReturnType<typeof ledgerRows>): boolean {
  let running = 0;
  for (const r of [...rows].reverse()) {
    if (r.amount_in_cents + r.fee_in_cents !== r.net_amount_in_cents) return false;
    running += r.net_amount_in_cents;
    if (r.balance_after_in_cents !== running) return false;
  }
  return true;
}
