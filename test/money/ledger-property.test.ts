import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config.js';
import { createContext } from '../../src/daemon.js';
import { tx } from '../../src/db/database.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { AccountsService, type Account } from '../../src/accounts/service.js';
import { balancesFor, postBalanceTransaction } from '../../src/modules/ledger/service.js';
import { createCheckout } from '../../src/modules/checkouts/service.js';
import { settleCheckoutPayment } from '../../src/modules/payments/service.js';
import { refundPaymentIntent } from '../../src/modules/refunds/service.js';
import type { ApiError } from '../../src/errors.js';

type Op =
  | { kind: 'charge'; account: number; currency: 'GTQ' | 'USD'; amount: number; fail: boolean }
  | { kind: 'refund'; pick: number }
  | { kind: 'transfer' | 'payout'; account: number; currency: 'GTQ' | 'USD'; amount: number };

const currency = fc.constantFrom('GTQ' as const, 'USD' as const);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('charge' as const), account: fc.nat(1), currency, amount: fc.integer({ min: 500, max: 100_000_000 }), fail: fc.boolean() }),
  fc.record({ kind: fc.constant('refund' as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant('transfer' as const),
    account: fc.nat(1),
    currency,
    amount: fc.integer({ min: -5_000_000, max: 5_000_000 }).filter((n) => n !== 0),
  }),
  fc.record({ kind: fc.constant('payout' as const), account: fc.nat(1), currency, amount: fc.integer({ min: 1, max: 5_000_000 }) }),
);

let dir: string;
let ctx: ReturnType<typeof createContext>;
let accounts: Account[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'posd-ledger-'));
  // NORMAL: the property runs thousands of commits; durability is not what it checks.
  const config = validateConfig({ data_dir: dir, database: { synchronous: 'NORMAL' }, log: { level: 'silent' } });
  ctx = createContext(config, { clock: new ManualClock(), log: pino({ level: 'silent' }) });
  const service = new AccountsService(ctx.db, ctx.clock);
  const org = service.createOrganization('Prop');
  accounts = [0, 1].map((i) => service.createAccount({ name: `A${i}`, organizationId: org.id }).account);
  service.updateSettings(accounts[1].id, { fee_percent: 3.9, fee_fixed_in_cents: 200 });
  accounts[1] = service.account(accounts[1].id)!;
});
afterAll(() => {
  ctx.db.close();
  rmSync(dir, { recursive: true, force: true });
});

function checkInvariants(): void {
  const all = ctx.db.prepare('SELECT * FROM balance_transactions ORDER BY seq').all() as any[];
  const running = new Map<string, number>();
  for (const r of all) {
    expect(r.amount_in_cents + r.fee_in_cents).toBe(r.net_amount_in_cents);
    const key = `${r.account_id}/${r.currency}`;
    const next = (running.get(key) ?? 0) + r.net_amount_in_cents;
    expect(r.balance_after_in_cents).toBe(next);
    running.set(key, next);
  }
  for (const b of balancesFor(
    ctx,
    accounts.map((a) => a.id),
    true,
  )) {
    const sum = all.filter((r) => r.account_id === b.account_id && r.currency === b.currency).reduce((s, r) => s + r.net_amount_in_cents, 0);
    expect(b.available_in_cents).toBe(sum);
  }
}

describe('ledger invariants (property)', () => {
  it('keep amount + fee = net, the balance_after chain and balances = sum of nets under any sequence', () => {
    const refundable: Array<{ account: Account; pa: string }> = [];
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 25 }), (ops) => {
        for (const o of ops) {
          if (o.kind === 'charge') {
            const account = accounts[o.account];
            const co = createCheckout(ctx, account, { items: [{ amount_in_cents: o.amount, currency: o.currency }] });
            const r = settleCheckoutPayment(ctx, account, { checkoutId: co.id, method: 'card', outcome: o.fail ? 'failed' : 'succeeded' });
            expect(r.balanceTransactionId === null).toBe(o.fail);
            if (!o.fail) refundable.push({ account, pa: r.paymentIntentId });
          } else if (o.kind === 'refund') {
            if (refundable.length === 0) continue;
            const { account, pa } = refundable[o.pick % refundable.length];
            let refund;
            try {
              refund = refundPaymentIntent(ctx, account, pa);
            } catch (err) {
              expect((err as ApiError).code).toBe('already_refunded');
              continue;
            }
            const charge = ctx.db.prepare('SELECT * FROM payment_intents WHERE id = ?').get(pa) as any;
            // A refunded charge nets to zero when the fee is returned: the refund row undoes the charge row's net.
            expect(refund.amount_in_cents - refund.fee_returned_in_cents).toBe(charge.amount_in_cents + charge.fee_in_cents);
          } else {
            const account = accounts[o.account];
            tx(ctx.db, () =>
              postBalanceTransaction(ctx, {
                accountId: account.id,
                liveMode: true,
                type: o.kind,
                amountInCents: o.kind === 'payout' ? -o.amount : o.amount,
                feeInCents: o.kind === 'payout' ? -Math.min(500, o.amount) : 0,
                currency: o.currency,
                sourceId: 'test',
                sourceType: o.kind,
              }),
            );
          }
        }
        checkInvariants();
      }),
      { numRuns: 60 },
    );
  });
});
