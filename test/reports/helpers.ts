import { tx } from '../../src/db/database.js';
import type { AppContext } from '../../src/context.js';
import { postBalanceTransaction } from '../../src/modules/ledger/service.js';

/** Posts `n` ledger rows (charges with fees, and every fifth a refund) through the ledger's own function. */
export function postRows(ctx: AppContext, accountId: string, n: number, opts: { currency?: string; liveMode?: boolean; description?: string } = {}): void {
  tx(ctx.db, () => {
    for (let i = 0; i < n; i++) {
      const refund = i % 5 === 4;
      const amount = refund ? -(1000 + i) : 10000 + i;
      postBalanceTransaction(ctx, {
        accountId,
        liveMode: opts.liveMode ?? false,
        type: refund ? 'refund' : 'charge',
        amountInCents: amount,
        feeInCents: refund ? 0 : -450,
        feeDetails: refund ? undefined : { commission_in_cents: 402, vat_withheld_in_cents: 48 },
        currency: opts.currency ?? 'GTQ',
        sourceId: `pa_test${i}`,
        sourceType: 'payment_intent',
        description: opts.description ?? `Venta ${i}`,
      });
    }
  });
}

export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  if (cell !== '' || row.length) throw new Error('CSV does not end with a complete line');
  return rows;
}
