import { describe, expect, it } from 'vitest';
import type { AppContext } from '../../src/context.js';
import type { PosdModule } from '../../src/api/module.js';
import { MODULES, buildRegistry } from '../../src/modules/index.js';
import { SyncRegistry, SyncRejection } from '../../src/sync/shared/registry.js';
import { checkoutHooksOf } from '../../src/modules/checkouts/hooks.js';
import type { PushRecord } from '../../src/sync/shared/wire.js';

const registry = buildRegistry(MODULES);
// A malformed payload is refused before the applier runs, so no database is needed to see it.
const noCtx = {} as AppContext;
const origin = { storeId: 'store_1', keyAccountId: 'ac_1' };
const record = (kind: string, payload: Record<string, unknown>): PushRecord => ({
  seq: 1,
  prev_seq: 0,
  id: 'sync_1',
  kind,
  account_id: 'ac_1',
  live_mode: true,
  payload,
  created_at: '2026-01-01T00:00:00.000Z',
});
function refusal(kind: string, payload: Record<string, unknown>): SyncRejection {
  try {
    registry.sync.applier(kind)!(noCtx, record(kind, payload), origin);
  } catch (err) {
    if (err instanceof SyncRejection) return err;
    throw err;
  }
  throw new Error(`${kind} was not refused`);
}

describe('the sync registry built from the modules', () => {
  it('knows every kind the modules declare, each from its owner', () => {
    expect(registry.sync.kinds()).toEqual([
      'balance_payment',
      'bank_account',
      'booking',
      'cash_sale',
      'checkout_payment',
      'connected_account',
      'connected_account_verification',
      'contract',
      'coupon',
      'coupon_redemption',
      'dispute',
      'event',
      'offline_policy_change',
      'outage_window',
      'reconciliation_report',
      'refund',
      'stored_payment',
      'subscription',
      'terminal_payment',
      'transfer',
      'withdrawal',
    ]);
    for (const kind of [
      'api_key',
      'record_rejected',
      'account',
      'balance_transaction',
      'intent',
      'tax_invoice_url',
      'bank_account',
      'product',
      'coupon',
      'bookable',
      'class_session',
      'booking',
      'dispute',
    ]) {
      expect(registry.sync.feedApplier(kind), kind).toBeTypeOf('function');
    }
    expect(registry.sync.rejectionHandler('booking')).toBeTypeOf('function');
    expect(registry.sync.rowTotals()).toHaveLength(2);
  });

  it('refuses a payload its kind schema does not accept, with the kind’s reason and no code', () => {
    expect(refusal('booking', { op: 'created', booking: { id: 'bk_1' } })).toMatchObject({
      reason: 'booking record without row, occupancy or refs (written by an older posd?)',
      code: null,
    });
    expect(refusal('terminal_payment', { payment_intent: { id: 'pa_1' } }).reason).toBe('terminal_payment record without payment_intent, intent or checkout');
    // A stored payment is pushed only when final: one still waiting is malformed.
    expect(refusal('stored_payment', { id: 'sp_1', status: 'stored' }).reason).toBe(
      'stored_payment record without its id, references, final status, amount or times',
    );
    expect(refusal('withdrawal', { change: 'created', transfer: { id: 'tr_1' }, balance_transactions: [] }).reason).toBe(
      'withdrawal record without transfer or balance_transactions',
    );
    expect(refusal('connected_account_verification', { account_id: 'ac_2', status: 'approved', document_errors: {} }).reason).toBe(
      'connected_account_verification record without account_id or status',
    );
    expect(refusal('balance_payment', { payment_intent: { id: 'pa_1' } }).reason).toBe(
      'balance_payment record without a consistent payment_intent, checkout and payer side',
    );
    expect(refusal('dispute', { change: 'created', dispute: { id: 'dp_1' }, balance_transactions: [] }).reason).toBe(
      'dispute record without dispute or balance_transactions',
    );
    expect(refusal('event', { id: 'ev_1', type: 'x' }).reason).toBe('event record without id, type or payload');
  });

  it('refuses a payload whose fields disagree, which a schema cannot say', () => {
    const sale = { id: 'in_1', amount_in_cents: 100, currency: 'GTQ', created_at: '2026-01-01T00:00:00.000Z', checkout: { id: 'ch_1' } };
    expect(refusal('cash_sale', { sale, cash_intent: { id: 'ci_1', intent_id: 'in_other' } }).reason).toBe('cash_sale record without sale or cash_intent');
    const coupon = {
      id: 'co_1',
      name: 'X',
      discount_mode: 'code',
      duration: 'once',
      status: 'active',
      created_at: '2026-01-01T00:00:00.000Z',
      product_ids: [],
    };
    expect(refusal('coupon', { ...coupon, amount_off_in_cents: 100, percent_off: 10 }).reason).toBe('coupon record without id, name, discount or status');
  });

  it('refuses to start with a kind declared by two modules', () => {
    const twice: PosdModule = { name: 'twice', sync: { push: { cash_sale: { apply() {} } } } };
    expect(() => new SyncRegistry([...MODULES, twice])).toThrow(/twice declares a sync applier for cash_sale/);
  });
});

describe('the checkout hooks built from the modules', () => {
  it('prices at the lines’ sum without a pricing module, and refuses two pricing modules', () => {
    const hooks = checkoutHooksOf([]);
    const price = hooks.price(noCtx, {} as never, {
      checkoutId: null,
      items: [{ amount_in_cents: 250, quantity: 2, product_id: null }],
      currency: 'GTQ',
      customer_id: null,
    });
    expect(price).toMatchObject({ discount_in_cents: 0, total_in_cents: 500 });
    const pricing = (name: string): PosdModule => ({ name, checkout: { price: () => price } });
    expect(() => checkoutHooksOf([pricing('a'), pricing('b')])).toThrow(/a and b both declare a price/);
  });

  it('runs the paid hooks in module order: transfer_setups split, coupons count, then subscriptions start', () => {
    const seen: string[] = [];
    const hooks = checkoutHooksOf([
      { name: 'first', checkout: { afterPay: () => void seen.push('first'), beforePay: () => void seen.push('before') } },
      { name: 'second', checkout: { afterPay: () => void seen.push('second') } },
    ]);
    hooks.beforePay(noCtx, 'ch_1');
    hooks.afterPay(noCtx, {} as never, {} as never, { paymentIntentId: 'pa_1', card: null });
    expect(seen).toEqual(['before', 'first', 'second']);
    // Checkouts first: a paid checkout takes its products' units off (inventory_quantity) before the rest.
    expect(MODULES.filter((m) => m.checkout?.afterPay).map((m) => m.name)).toEqual(['checkouts', 'transfers', 'coupons', 'subscriptions']);
    expect(MODULES.filter((m) => m.checkout?.beforePay).map((m) => m.name)).toEqual(['contracts']);
  });
});
