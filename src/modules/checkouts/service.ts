import type { AppContext } from '../../context.js';
import { publicBaseUrl } from '../../config.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, invalid } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import { MAX_LINE_CENTS, assertAccountCurrency, assertMinimumCharge } from '../../money.js';
import { createProduct, getPrice, getProduct } from '../products/service.js';
import type { Product } from '../products/schema.js';
import { findOrCreateCustomer, getCustomer } from '../customers/service.js';
import { getUser } from '../users/service.js';
import { checkoutsStore, type CheckoutFilter, type CheckoutRow } from './store.js';
import { initialState, nextState } from '../../lifecycle.js';
import { checkoutMachine, EDITABLE_STATUSES, type CheckoutEvent, type CheckoutStatus } from './machine.js';
import type { Checkout, CheckoutItem, TransferSetup } from './schema.js';
import { accountsOf } from '../../accounts/service.js';

export type { Checkout, CheckoutItem } from './schema.js';

export interface CheckoutItemInput {
  name?: string;
  amount_in_cents?: number;
  currency?: string;
  quantity?: number;
  tax_category?: 'good' | 'service';
  product_id?: string;
  price_id?: string;
  charge_type?: 'one_time' | 'recurring';
  billing_interval?: string;
  billing_interval_count?: number;
  free_trial_interval?: string | null;
  free_trial_interval_count?: number | null;
  periods_before_automatic_cancellation?: number | null;
  payment_method_types?: Array<'card' | 'bank_transfer' | 'balance' | 'stablecoins'>;
  available_installments?: number[];
  image_url?: string | null;
  description?: string | null;
  custom_terms_and_conditions?: string | null;
  metadata?: Record<string, unknown> | null;
  has_dynamic_pricing?: boolean;
}

export interface CheckoutInput {
  items: CheckoutItemInput[];
  currency?: string;
  customer_id?: string | null;
  metadata?: Record<string, unknown>;
  expires_at?: string | null;
  /** Coupon codes typed for this checkout (spec 2.7); automatic coupons apply without them. */
  coupon_codes?: string[];
  success_url?: string | null;
  cancel_url?: string | null;
  transfer_setups?: Array<{ amount_in_cents: number; recipient_id?: string | null }>;
  /** The hosted way to name the buyer by user (`us_`): it becomes the customer of that e-mail. */
  user_id?: string | null;
}

/**
 * `user_id` (hosted section 3.1, "prefills buyer data"): the account's user becomes the checkout's
 * customer, found or made by the user's e-mail. With `customer_id` too, the two must be one buyer.
 */
function customerOfUser(ctx: AppContext, account: Account, input: CheckoutInput): string | null | undefined {
  if (!input.user_id) return input.customer_id;
  const user = getUser(ctx, [account.id], account.live_mode, input.user_id);
  if (!user) throw invalid({ user_id: 'does not exist' });
  const customer = findOrCreateCustomer(ctx, account, { email: user.email, full_name: user.name, phone: user.phone });
  if (input.customer_id && input.customer_id !== customer.id) throw invalid({ user_id: 'names another buyer than customer_id' });
  return customer.id;
}

export function checkoutUrl(ctx: AppContext, id: string): string {
  return `${publicBaseUrl(ctx.config)}/pay/${id}`;
}

/** The hosted service's name and path for the buyer's page (`checkout_url`). */
export function checkoutSessionUrl(ctx: AppContext, id: string): string {
  return `${publicBaseUrl(ctx.config)}/checkout-session/${id}`;
}

function toCheckout(ctx: AppContext, r: CheckoutRow): Checkout {
  const items = (JSON.parse(r.items) as CheckoutItem[]).map((l) => ({
    payment_method_types: null,
    available_installments: null,
    image_url: null,
    description: null,
    custom_terms_and_conditions: null,
    metadata: null,
    has_dynamic_pricing: false,
    ...l,
  }));
  const subtotal = items.reduce((s, l) => s + l.amount_in_cents * l.quantity, 0);
  const metadata = JSON.parse(r.metadata) as Record<string, unknown>;
  // What the payments and coupons modules keep of it (hooks.ts `describe`).
  const more = ctx.registry.checkout.describe(ctx, {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    status: r.status,
    payment_intent_id: r.payment_intent_id,
    customer_id: r.customer_id,
    metadata,
  });
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    status: r.status,
    amount_in_cents: r.amount_in_cents,
    currency: r.currency,
    items,
    metadata,
    url: checkoutUrl(ctx, r.id),
    checkout_url: checkoutSessionUrl(ctx, r.id),
    total_in_cents: r.amount_in_cents,
    subtotal_in_cents: subtotal,
    // What the coupons took off and the coupon (as GET /coupons/{id}); null when nothing was.
    discount: subtotal > r.amount_in_cents ? { amount_in_cents: subtotal - r.amount_in_cents, coupon: more.coupon ?? null } : null,
    payment: more.payment ?? null,
    payment_method: more.payment_method ?? null,
    // The hosted page's custom fields; posd's page asks the buyer nothing (docs/compatibility.md).
    custom_fields: [],
    success_url: r.success_url ?? null,
    cancel_url: r.cancel_url ?? null,
    transfer_setups: JSON.parse(r.transfer_setups ?? '[]') as TransferSetup[],
    customer_id: r.customer_id,
    expires_at: r.expires_at,
    latest_intent: r.latest_intent_id ? { id: r.latest_intent_id } : null,
    payment_intent_id: r.payment_intent_id,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/**
 * Resolves inline and catalogue lines into priced lines. A line names either its own amount or a
 * `price_id`/`product_id` (the product's classification then wins, spec 4.13). Every line shares the
 * checkout's currency; the total must reach the minimum charge (gaps.md).
 */
type Interval = 'day' | 'week' | 'month' | 'year';
/** An inline recurring line, priced through a product made for it when the checkout is written. */
interface RecurringLine {
  index: number;
  interval: Interval;
  count: number;
  /** The line's price: the checkout charges 0 for it now when a free trial runs first. */
  amount: number;
  trial: { interval: Interval; count: number } | null;
  periodsBeforeAutomaticCancellation: number | null;
}

function resolveItems(
  ctx: AppContext,
  account: Account,
  items: CheckoutItemInput[],
  currency?: string,
): { items: CheckoutItem[]; currency: string; total: number; recurring: RecurringLine[] } {
  const recurring: RecurringLine[] = [];
  let withTrial = false;
  const errors: Record<string, string[]> = {};
  const add = (f: string, m: string) => (errors[f] ??= []).push(m);
  const lines: CheckoutItem[] = [];
  if (items.length === 0) add('items', 'must hold at least one item');
  items.forEach((item, i) => {
    const quantity = item.quantity ?? 1;
    // Callers inside posd (terminals, scheduling) skip the HTTP schema: the same limits hold here.
    if (!Number.isInteger(quantity) || quantity < 1 || quantity > 9) return add(`items.${i}.quantity`, 'must be an integer from 1 to 9');
    const inline = !item.price_id && !item.product_id;
    if (item.charge_type === 'recurring' && inline) {
      // Served through a product made for the line at creation (below), whose subscription the
      // payment starts (a free trial and an automatic end are the made price's).
      if (item.free_trial_interval_count && !item.free_trial_interval) return add(`items.${i}.free_trial_interval_count`, 'needs free_trial_interval');
      if (!item.billing_interval) return add(`items.${i}.billing_interval`, 'is required on a recurring line');
    } else if (
      item.billing_interval ||
      item.billing_interval_count ||
      item.free_trial_interval ||
      item.free_trial_interval_count ||
      item.periods_before_automatic_cancellation
    ) {
      return add(`items.${i}.charge_type`, 'must be recurring (an inline line) for billing_interval and the other recurring fields');
    }
    // What the buyer may pay the line with, kept on the line as given (the checkout page reads it).
    // A free trial keeps a card for its first charge: such a line is paid by card (set below).
    const cardForTrial = () => {
      if (item.payment_method_types && !item.payment_method_types.includes('card')) {
        add(`items.${i}.payment_method_types`, 'must include card: a free trial keeps the card for its first charge');
        return false;
      }
      payWith.payment_method_types = item.payment_method_types ?? ['card'];
      return true;
    };
    const payWith = {
      payment_method_types: item.payment_method_types ?? null,
      available_installments: item.available_installments ?? null,
      ...shownOf(item),
    };
    const a = item.amount_in_cents;
    if (a !== undefined && (!Number.isInteger(a) || a < 1 || a > MAX_LINE_CENTS)) {
      return add(`items.${i}.amount_in_cents`, `must be an integer from 1 to ${MAX_LINE_CENTS}`);
    }
    if (item.price_id || item.product_id) {
      const found = item.price_id ? getPrice(ctx, account, item.price_id) : undefined;
      const product = found?.product ?? (item.product_id ? getProduct(ctx, account, item.product_id) : undefined);
      const price = found?.price ?? product?.prices.find((p) => p.charge_type === 'one_time') ?? product?.prices[0];
      if (item.price_id && !found) return add(`items.${i}.price_id`, 'does not exist');
      if (found?.deleted) return add(`items.${i}.price_id`, 'was deleted from its product');
      if (!product) return add(`items.${i}.product_id`, 'does not exist');
      if (product.status === 'archived') return add(`items.${i}.product_id`, 'is archived');
      if (!price) return add(`items.${i}.product_id`, 'has no price');
      // Hosted section 4: at 0 units the product is disabled; a clear 422, not a 400 (the body is right).
      if (product.inventory_quantity !== null && product.inventory_quantity < quantity) {
        throw new ApiError('product_sold_out', {
          message: `Product ${product.id} has ${product.inventory_quantity} units left; items.${i} asks for ${quantity}.`,
          errors: { [`items.${i}.product_id`]: [product.inventory_quantity === 0 ? 'is sold out' : `has only ${product.inventory_quantity} units left`] },
        });
      }
      // A recurring price with a free trial is not charged now: its subscription's first charge
      // comes when the trial ends (hosted section 3.1; docs/subscriptions.md).
      const trial = price.charge_type === 'recurring' && price.free_trial_interval !== null;
      if (trial) withTrial = true;
      if (trial && !cardForTrial()) return;
      lines.push({
        name: item.name ?? product.name,
        amount_in_cents: trial ? 0 : price.amount_in_cents,
        currency: price.currency,
        quantity,
        tax_category: product.tax_category,
        product_id: product.id,
        price_id: price.id,
        ...payWith,
        ...productPayWith(product, item, price.currency),
      });
      return;
    }
    if (item.amount_in_cents === undefined) return add(`items.${i}.amount_in_cents`, 'is required without product_id or price_id');
    let trial: RecurringLine['trial'] = null;
    if (item.charge_type === 'recurring') {
      // A zero count (what a shop sends for "no trial") or no interval: no trial.
      if (item.free_trial_interval && item.free_trial_interval_count !== 0)
        trial = { interval: item.free_trial_interval as Interval, count: item.free_trial_interval_count ?? 1 };
      if (trial) withTrial = true;
      if (trial && !cardForTrial()) return;
      recurring.push({
        index: lines.length,
        interval: item.billing_interval as Interval,
        count: item.billing_interval_count ?? 1,
        amount: item.amount_in_cents,
        trial,
        periodsBeforeAutomaticCancellation: item.periods_before_automatic_cancellation ?? null,
      });
    }
    lines.push({
      name: item.name ?? 'Item',
      amount_in_cents: trial ? 0 : item.amount_in_cents,
      currency: item.currency ?? currency ?? account.default_currency,
      quantity,
      tax_category: item.tax_category ?? 'good',
      product_id: null,
      price_id: null,
      ...payWith,
    });
  });
  if (Object.keys(errors).length) throw invalid(errors);
  const cur = currency ?? lines[0].currency;
  assertAccountCurrency(account.currencies, cur);
  lines.forEach((l, i) => {
    if (l.currency !== cur) add(`items.${i}.currency`, `must be ${cur}, the checkout's currency`);
    if (l.available_installments?.length && cur !== 'GTQ') add(`items.${i}.available_installments`, 'installments exist only in GTQ');
  });
  if (Object.keys(errors).length) throw invalid(errors);
  const total = lines.reduce((sum, l) => sum + l.amount_in_cents * l.quantity, 0);
  // Only free trials may bring a checkout to 0: paying it keeps the card for the trial's end.
  if (!(withTrial && total === 0)) assertMinimumCharge(total, cur);
  return { items: lines, currency: cur, total, recurring };
}

/**
 * A product's payment settings (hosted section 4) on its line, where the line names none: the methods
 * its `custom_payment_method_settings` allow, its installments and dynamic pricing. The checkout page
 * offers only the methods every line allows.
 */
function productPayWith(product: Product, item: CheckoutItemInput, currency: string): Partial<CheckoutItem> {
  const out: Partial<CheckoutItem> = {};
  if (item.payment_method_types === undefined && product.custom_payment_method_settings) {
    out.payment_method_types = [
      ...(product.card_payments_enabled ? (['card'] as const) : []),
      ...(product.bank_transfer_payments_enabled ? (['bank_transfer'] as const) : []),
    ];
  }
  // Installments exist only in GTQ (as hosted): a USD price of the product has none.
  if (item.available_installments === undefined && product.available_installments.length && currency === 'GTQ')
    out.available_installments = product.available_installments;
  if (item.has_dynamic_pricing === undefined && product.has_dynamic_pricing) out.has_dynamic_pricing = true;
  return out;
}

/** A line's page fields (hosted section 3.1), kept only when given so lines stay small. */
function shownOf(item: CheckoutItemInput): Partial<CheckoutItem> {
  const out: Partial<CheckoutItem> = {};
  for (const k of ['image_url', 'description', 'custom_terms_and_conditions', 'metadata', 'has_dynamic_pricing'] as const) {
    if (item[k] !== undefined) (out as Record<string, unknown>)[k] = item[k];
  }
  return out;
}

function checkExpiry(ctx: AppContext, expiresAt: string | null | undefined): string | null {
  if (!expiresAt) return null;
  const ms = Date.parse(expiresAt);
  if (!(ms > ctx.clock.now())) throw invalid({ expires_at: 'must be in the future' });
  return isoTime(ms);
}

function checkCustomer(ctx: AppContext, account: Account, id: string | null | undefined): string | null {
  if (!id) return null;
  if (!getCustomer(ctx, account, id)) throw invalid({ customer_id: 'does not exist' });
  return id;
}

/**
 * The split of a checkout (hosted `transfer_setups`): each share goes, once the checkout is paid, from
 * the checkout's account to `recipient_id` as a transfer (the transfers module's `afterPay`). No
 * recipient means the platform the account is connected to. Recipients are checked now, so a typo is
 * a 400 and not a split that silently never happens; the shares may not exceed the total.
 */
function resolveTransferSetups(ctx: AppContext, account: Account, setups: CheckoutInput['transfer_setups'], currency: string, total: number): TransferSetup[] {
  if (!setups?.length) return [];
  const accounts = accountsOf(ctx);
  const errors: Record<string, string[]> = {};
  const out: TransferSetup[] = [];
  setups.forEach((t, i) => {
    let recipient = t.recipient_id ? accounts.account(t.recipient_id) : account.parent_account_id ? accounts.account(account.parent_account_id) : undefined;
    // The hosted service has one id for both environments: a sandbox split may name a live id.
    if (recipient?.live_mode && !account.live_mode) recipient = accounts.sandboxOf(recipient.id);
    if (!recipient || recipient.live_mode !== account.live_mode) {
      (errors[`transfer_setups.${i}.recipient_id`] ??= []).push(
        t.recipient_id ? 'no account with this id in this environment' : 'is required: the account has no platform',
      );
      return;
    }
    if (recipient.id === account.id) return void (errors[`transfer_setups.${i}.recipient_id`] ??= []).push('must be another account than the one paid');
    out.push({
      id: newId('ts'),
      status: 'pending',
      amount_in_cents: t.amount_in_cents,
      currency,
      recipient_id: recipient.id,
      transfer_id: null,
      failure_reason: null,
    });
  });
  if (out.reduce((sum, t) => sum + t.amount_in_cents, 0) > total) (errors.transfer_setups ??= []).push(`the shares exceed the checkout's total of ${total}`);
  if (Object.keys(errors).length) throw invalid(errors);
  return out;
}

/**
 * Inside the checkout's transaction: each inline recurring line gets a product of its own with one
 * recurring price (as the hosted service keeps a product behind every subscription), and the line
 * names them, so paying the checkout starts the subscription through the subscriptions module's
 * hook and its biller charges it every period, as for a catalogue product.
 */
function recurringProducts(ctx: AppContext, account: Account, items: CheckoutItem[], recurring: RecurringLine[]): CheckoutItem[] {
  const out = items.map((l) => ({ ...l }));
  for (const r of recurring) {
    const line = out[r.index]!;
    const product = createProduct(ctx, account, {
      name: line.name,
      description: line.description ?? null,
      tax_category: line.tax_category,
      metadata: { made_for: 'inline_recurring_line' },
      prices_attributes: [
        {
          amount_in_cents: r.amount,
          currency: line.currency as 'GTQ' | 'USD',
          charge_type: 'recurring',
          billing_interval: r.interval,
          billing_interval_count: r.count,
          free_trial_interval: r.trial?.interval ?? null,
          free_trial_interval_count: r.trial?.count ?? null,
          periods_before_automatic_cancellation: r.periodsBeforeAutomaticCancellation,
        },
      ],
    });
    line.product_id = product.id;
    line.price_id = product.prices[0]!.id;
  }
  return out;
}

/** The split as it now stands (inside the payment's transaction: the transfers module records each share). */
export function setCheckoutTransferSetups(ctx: AppContext, checkoutId: string, setups: TransferSetup[]): void {
  checkoutsStore(ctx.db).setTransferSetups(checkoutId, JSON.stringify(setups));
}

export function createCheckout(ctx: AppContext, account: Account, given: CheckoutInput): Checkout {
  const { user_id: _user, ...rest } = given;
  const input: CheckoutInput = { ...rest, customer_id: customerOfUser(ctx, account, given) };
  const resolved = resolveItems(ctx, account, input.items, input.currency);
  // Priced by the module that declares the checkout's price (coupons), with the codes typed.
  const price = ctx.registry.checkout.price(ctx, account, {
    checkoutId: null,
    items: resolved.items,
    currency: resolved.currency,
    customer_id: input.customer_id ?? null,
    coupon_codes: input.coupon_codes ?? [],
  });
  if (price.discount_in_cents > 0) assertMinimumCharge(price.total_in_cents, resolved.currency);
  const setups = resolveTransferSetups(ctx, account, input.transfer_setups, resolved.currency, price.total_in_cents);
  const at = isoTime(ctx.clock.now());
  return tx(ctx.db, () => {
    const row: CheckoutRow = {
      id: newId('ch'),
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      status: initialState(checkoutMachine),
      amount_in_cents: price.total_in_cents,
      currency: resolved.currency,
      items: JSON.stringify(recurringProducts(ctx, account, resolved.items, resolved.recurring)),
      metadata: JSON.stringify(input.metadata ?? {}),
      customer_id: checkCustomer(ctx, account, input.customer_id),
      expires_at: checkExpiry(ctx, input.expires_at),
      latest_intent_id: null,
      payment_intent_id: null,
      success_url: input.success_url ?? null,
      cancel_url: input.cancel_url ?? null,
      transfer_setups: JSON.stringify(setups),
      created_at: at,
      updated_at: at,
    };
    checkoutsStore(ctx.db).insert(row);
    price.record(row.id);
    return toCheckout(ctx, row);
  });
}

/**
 * A checkout born paid: a cash sale is collected before it is recorded, so its checkout never was
 * unpaid. Minimum charges do not apply (gaps.md names them for checkouts paid by card or terminal).
 * Call inside the sale's transaction.
 */
export function insertPaidCheckout(
  ctx: AppContext,
  account: Account,
  input: {
    items: CheckoutItem[];
    currency: string;
    customerId: string | null;
    metadata?: Record<string, unknown>;
    intentId: string;
    /** A checkout made at a store keeps its id and time at the central (sync). */
    id?: string;
    createdAt?: string;
  },
): Checkout {
  const at = input.createdAt ?? isoTime(ctx.clock.now());
  const row: CheckoutRow = {
    id: input.id ?? newId('ch'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    status: 'paid',
    amount_in_cents: input.items.reduce((s, l) => s + l.amount_in_cents * l.quantity, 0),
    currency: input.currency,
    items: JSON.stringify(input.items),
    metadata: JSON.stringify(input.metadata ?? {}),
    customer_id: input.customerId,
    expires_at: null,
    latest_intent_id: input.intentId,
    payment_intent_id: null,
    created_at: at,
    updated_at: at,
  };
  checkoutsStore(ctx.db).insert(row);
  return toCheckout(ctx, row);
}

/**
 * A checkout settled at a store, written at the central as the store has it (sync): same id, status,
 * lines, links and times. Does nothing when the central already holds that id.
 */
export function insertStoreCheckout(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, checkout: Checkout): void {
  if (checkoutsStore(ctx.db).byId(checkout.id)) return;
  checkoutsStore(ctx.db).insert({
    id: checkout.id,
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    status: checkout.status,
    amount_in_cents: checkout.amount_in_cents,
    currency: checkout.currency,
    items: JSON.stringify(checkout.items),
    metadata: JSON.stringify(checkout.metadata ?? {}),
    customer_id: checkout.customer_id,
    expires_at: checkout.expires_at,
    latest_intent_id: checkout.latest_intent?.id ?? null,
    payment_intent_id: checkout.payment_intent_id,
    created_at: checkout.created_at,
    updated_at: checkout.updated_at,
  });
}

function ownedRow(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, id: string): CheckoutRow | undefined {
  const row = checkoutsStore(ctx.db).byId(id);
  return row && row.account_id === account.id && (row.live_mode === 1) === account.live_mode ? row : undefined;
}

export function getCheckout(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, id: string): Checkout | undefined {
  const row = ownedRow(ctx, account, id);
  return row ? toCheckout(ctx, row) : undefined;
}

/**
 * A checkout by id alone, for the buyer's checkout page, which has no key: like the hosted
 * service's `/checkout-session/{id}`, knowing the id (16 random characters) is what lets one see it.
 */
/** Whether the checkout machine allows `event` from `status` (a pushed payment is checked so at the central). */
export function checkoutAllows(status: string, event: CheckoutEvent['type']): boolean {
  return nextState(checkoutMachine, status as CheckoutStatus, { type: event } as CheckoutEvent) !== null;
}

export function checkoutForPage(ctx: AppContext, id: string): Checkout | undefined {
  const row = checkoutsStore(ctx.db).byId(id);
  return row ? toCheckout(ctx, row) : undefined;
}

/** Reads across several accounts (organization keys); the row keeps its account_id. */
/** A checkout's status alone, without building its view (a terminal charge asks it twice: decision 0308). */
export function checkoutStatusIn(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): string | undefined {
  const row = checkoutsStore(ctx.db).byId(id);
  return row && accountIds.includes(row.account_id) && (row.live_mode === 1) === liveMode ? row.status : undefined;
}

export function getCheckoutIn(ctx: AppContext, accountIds: string[], liveMode: boolean, id: string): Checkout | undefined {
  const row = checkoutsStore(ctx.db).byId(id);
  return row && accountIds.includes(row.account_id) && (row.live_mode === 1) === liveMode ? toCheckout(ctx, row) : undefined;
}

export function listCheckouts(
  ctx: AppContext,
  accountIds: string[],
  liveMode: boolean,
  limit: number,
  offset: number,
  filter: CheckoutFilter = {},
): { rows: Checkout[]; total: number } {
  const { rows, total } = checkoutsStore(ctx.db).list(accountIds, liveMode, limit, offset, filter);
  return { rows: rows.map((r) => toCheckout(ctx, r)), total };
}

/** Only an unpaid checkout may change (spec 7: else 422). */
export function updateCheckout(ctx: AppContext, account: Account, id: string, patch: Partial<CheckoutInput>): Checkout {
  return tx(ctx.db, () => {
    const row = ownedRow(ctx, account, id);
    if (!row) throw new ApiError('not_found', { message: `No checkout with id ${id}.` });
    if (!EDITABLE_STATUSES.includes(row.status as CheckoutStatus)) {
      throw new ApiError('checkout_not_modifiable', { message: `The checkout is ${row.status}; only an unpaid checkout may change.` });
    }
    const next = { ...row, updated_at: isoTime(ctx.clock.now()) };
    if (patch.items || patch.currency) {
      const currentItems = JSON.parse(row.items) as CheckoutItem[];
      const items: CheckoutItemInput[] =
        patch.items ??
        currentItems.map((l) => ({
          ...l,
          product_id: l.product_id ?? undefined,
          price_id: l.price_id ?? undefined,
          payment_method_types: l.payment_method_types ?? undefined,
          available_installments: l.available_installments ?? undefined,
        }));
      const resolved = resolveItems(ctx, account, items, patch.currency ?? (patch.items ? undefined : row.currency));
      const lines = recurringProducts(ctx, account, resolved.items, resolved.recurring);
      Object.assign(next, { items: JSON.stringify(lines), amount_in_cents: resolved.total, currency: resolved.currency });
    }
    if (patch.metadata) next.metadata = JSON.stringify(patch.metadata);
    if (patch.success_url !== undefined) next.success_url = patch.success_url;
    if (patch.cancel_url !== undefined) next.cancel_url = patch.cancel_url;
    if (patch.customer_id !== undefined) next.customer_id = checkCustomer(ctx, account, patch.customer_id);
    if (patch.expires_at !== undefined) next.expires_at = checkExpiry(ctx, patch.expires_at);
    if (patch.items || patch.currency || patch.customer_id !== undefined) {
      // New lines or a new buyer: the coupons are priced again with the codes typed at creation.
      const price = ctx.registry.checkout.price(ctx, account, {
        checkoutId: id,
        items: JSON.parse(next.items) as CheckoutItem[],
        currency: next.currency,
        customer_id: next.customer_id,
      });
      if (price.discount_in_cents > 0) assertMinimumCharge(price.total_in_cents, next.currency);
      next.amount_in_cents = price.total_in_cents;
      price.record(id);
    }
    checkoutsStore(ctx.db).update(next);
    return toCheckout(ctx, next);
  });
}

/**
 * Moves a checkout through its machine (terminals mark `payment_in_progress` and back). 422
 * `checkout_not_modifiable` when the machine does not allow the move. Joins the caller's transaction.
 */
export function setCheckoutStatus(
  ctx: AppContext,
  account: Pick<Account, 'id' | 'live_mode'>,
  id: string,
  event: CheckoutEvent,
  links: { latestIntentId?: string; paymentIntentId?: string } = {},
): Checkout {
  return tx(ctx.db, () => {
    const row = ownedRow(ctx, account, id);
    if (!row) throw new ApiError('not_found', { message: `No checkout with id ${id}.` });
    const status = nextState(checkoutMachine, row.status as CheckoutStatus, event);
    if (!status) throw new ApiError('checkout_not_modifiable', { message: `A ${row.status} checkout cannot take ${event.type}.` });
    const next: CheckoutRow = {
      ...row,
      status,
      latest_intent_id: links.latestIntentId ?? row.latest_intent_id,
      payment_intent_id: links.paymentIntentId ?? row.payment_intent_id,
      updated_at: isoTime(ctx.clock.now()),
    };
    checkoutsStore(ctx.db).update(next);
    return toCheckout(ctx, next);
  });
}

/**
 * Names the payment a checkout already `payment_in_progress` waits for, without a move: a terminal
 * took the charge (the checkout turned `payment_in_progress` then), and its result is a payment that
 * waits (a card stored offline).
 */
export function linkCheckoutPayment(
  ctx: AppContext,
  account: Pick<Account, 'id' | 'live_mode'>,
  id: string,
  links: { latestIntentId: string; paymentIntentId: string },
): Checkout {
  return tx(ctx.db, () => {
    const row = ownedRow(ctx, account, id);
    if (!row) throw new ApiError('not_found', { message: `No checkout with id ${id}.` });
    if (row.status !== 'payment_in_progress') throw new ApiError('checkout_not_modifiable', { message: `A ${row.status} checkout waits for no payment.` });
    const next: CheckoutRow = {
      ...row,
      latest_intent_id: links.latestIntentId,
      payment_intent_id: links.paymentIntentId,
      updated_at: isoTime(ctx.clock.now()),
    };
    checkoutsStore(ctx.db).update(next);
    return toCheckout(ctx, next);
  });
}

export function isExpired(ctx: AppContext, checkout: Pick<Checkout, 'expires_at'>): boolean {
  return checkout.expires_at !== null && Date.parse(checkout.expires_at) <= ctx.clock.now();
}
