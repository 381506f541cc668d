import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { invalid, notFound } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import { assertAccountCurrency } from '../../money.js';
import { productsStore, type PriceRow, type ProductRow } from './store.js';
import { appendFeedChange } from '../../outbox/feed-changes.js';

/** A product as the feed carries it: its row and all its prices (prices are never changed, only added). */
export interface FeedProduct {
  product: ProductRow;
  prices: PriceRow[];
}

/** At a central, a product made or changed reaches the account's boxes with its prices. No-op at a store. */
function publishProduct(ctx: AppContext, row: ProductRow): void {
  const payload: FeedProduct = { product: row, prices: productsStore(ctx.db).prices(row.id) };
  appendFeedChange(ctx.db, {
    kind: 'product',
    accountId: row.account_id,
    liveMode: row.live_mode === 1,
    objectId: row.id,
    payload: { ...payload },
    createdAt: row.updated_at,
  });
}

/**
 * A product learnt from the central's feed: upserted by id to the central's state when that is not
 * older than this box's, and each price inserted once by id. No events, no sync record.
 */
export function applyCentralProduct(ctx: AppContext, p: FeedProduct): void {
  const store = productsStore(ctx.db);
  store.upsertProduct(p.product);
  for (const price of p.prices) if (!store.price(price.id)) store.insertPrice(price);
}
import { publicBaseUrl } from '../../config.js';
import {
  PAGE_SETTING_DEFAULTS,
  PAYMENT_SETTING_DEFAULTS,
  type CreateProductBody,
  type Price,
  type PriceInput,
  type Product,
  type UpdateProductBody,
} from './schema.js';

function toPrice(r: PriceRow): Price {
  return {
    id: r.id,
    product_id: r.product_id,
    amount_in_cents: r.amount_in_cents,
    currency: r.currency,
    charge_type: r.charge_type,
    billing_interval: r.billing_interval,
    billing_interval_count: r.billing_interval_count,
    free_trial_interval: r.free_trial_interval,
    free_trial_interval_count: r.free_trial_interval_count,
    periods_before_automatic_cancellation: r.periods_before_automatic_cancellation ?? null,
    periods_before_allowed_to_cancel: r.periods_before_allowed_to_cancel ?? null,
    proration_behavior: null,
    billing_cycle_anchor_day: null,
    defer_to_billing_day: false,
    created_at: r.created_at,
  };
}

/** The public product page (served by the checkout-page module): it opens a checkout of the product. */
export function storefrontLink(ctx: AppContext, productId: string): string {
  return `${publicBaseUrl(ctx.config)}/storefront/${productId}`;
}

function toProduct(ctx: AppContext, r: ProductRow): Product {
  const inventory = r.inventory_quantity ?? null;
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    name: r.name,
    description: r.description,
    tax_category: r.tax_category,
    // Hosted section 4: "product disabled at 0"; the stored status stays, so more stock reopens it.
    status: r.status === 'active' && inventory === 0 ? 'sold_out' : r.status,
    metadata: JSON.parse(r.metadata),
    ...PAGE_SETTING_DEFAULTS,
    ...PAYMENT_SETTING_DEFAULTS,
    ...(JSON.parse(r.page_settings ?? '{}') as Partial<Product>),
    inventory_quantity: inventory,
    storefront_link: storefrontLink(ctx, r.id),
    // The hosted page's custom fields; posd's pages ask the buyer none (docs/compatibility.md).
    custom_fields: [],
    prices: productsStore(ctx.db)
      .prices(r.id)
      .filter((p) => !p.deleted_at)
      .map(toPrice),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

/** The amount of a price input: `amount_in_cents`, or `amount_as_decimal` ("123.12") in cents. */
function centsOf(p: PriceInput, i: number): number | undefined {
  if (p.amount_in_cents !== undefined && p.amount_as_decimal !== undefined) {
    throw invalid({ [`prices_attributes.${i}.amount_as_decimal`]: 'send amount_in_cents or amount_as_decimal, not both' });
  }
  if (p.amount_as_decimal === undefined) return p.amount_in_cents;
  const [units, dec = ''] = p.amount_as_decimal.split('.');
  const cents = Number(units) * 100 + Number(dec.padEnd(2, '0'));
  if (!(cents >= 1)) throw invalid({ [`prices_attributes.${i}.amount_as_decimal`]: 'must be at least 0.01' });
  return cents;
}

function priceRows(account: Account, productId: string, inputs: Array<{ p: PriceInput; i: number }>, at: string): PriceRow[] {
  return inputs.map(({ p: given, i }) => {
    const amount = centsOf(given, i);
    if (amount === undefined) throw invalid({ [`prices_attributes.${i}.amount_in_cents`]: 'is required for a new price (or amount_as_decimal)' });
    if (!given.currency) throw invalid({ [`prices_attributes.${i}.currency`]: 'is required for a new price' });
    if (given._destroy) throw invalid({ [`prices_attributes.${i}._destroy`]: 'names a price to delete by its id' });
    const p = { ...given, amount_in_cents: amount, currency: given.currency };
    assertAccountCurrency(account.currencies, p.currency, `prices_attributes.${i}.currency`);
    const recurring = p.charge_type === 'recurring';
    if (recurring && !p.billing_interval) throw invalid({ [`prices_attributes.${i}.billing_interval`]: 'is required for a recurring price' });
    // `""` / 0 are the hosted service's "no trial" (its own answers carry them).
    const trial = p.free_trial_interval && p.free_trial_interval_count !== 0 ? p.free_trial_interval : null;
    if (trial && !recurring) throw invalid({ [`prices_attributes.${i}.free_trial_interval`]: 'is only for a recurring price' });
    if (!p.free_trial_interval && p.free_trial_interval_count)
      throw invalid({ [`prices_attributes.${i}.free_trial_interval_count`]: 'needs free_trial_interval' });
    for (const k of ['periods_before_automatic_cancellation', 'periods_before_allowed_to_cancel'] as const) {
      if (p[k] != null && !recurring) throw invalid({ [`prices_attributes.${i}.${k}`]: 'is only for a recurring price' });
    }
    const ends = p.periods_before_automatic_cancellation ?? null;
    const minimum = p.periods_before_allowed_to_cancel ?? null;
    if (ends !== null && minimum !== null && minimum > ends) {
      throw invalid({ [`prices_attributes.${i}.periods_before_allowed_to_cancel`]: 'cannot exceed periods_before_automatic_cancellation' });
    }
    return {
      id: newId('price'),
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      product_id: productId,
      amount_in_cents: p.amount_in_cents,
      currency: p.currency,
      charge_type: recurring ? 'recurring' : 'one_time',
      billing_interval: recurring ? p.billing_interval! : null,
      billing_interval_count: recurring ? (p.billing_interval_count ?? 1) : null,
      free_trial_interval: trial as PriceRow['free_trial_interval'],
      free_trial_interval_count: trial ? (p.free_trial_interval_count ?? 1) : null,
      periods_before_automatic_cancellation: ends,
      periods_before_allowed_to_cancel: minimum,
      created_at: at,
    };
  });
}

/** The page and payment settings a body names, over the ones already stored. */
function pageSettings(body: Record<string, unknown>, current = '{}'): string {
  const out: Record<string, unknown> = JSON.parse(current);
  for (const k of [...Object.keys(PAGE_SETTING_DEFAULTS), ...Object.keys(PAYMENT_SETTING_DEFAULTS)]) if (body[k] !== undefined) out[k] = body[k];
  const settled = { ...PAYMENT_SETTING_DEFAULTS, ...out };
  if (settled.custom_payment_method_settings && !settled.card_payments_enabled && !settled.bank_transfer_payments_enabled) {
    throw invalid({ custom_payment_method_settings: 'leaves no way to pay: enable card or bank transfer payments' });
  }
  return JSON.stringify(out);
}

/**
 * `prices_attributes` of an update (hosted section 4): without `id` a price is added; with `id` and
 * `_destroy` it is no longer offered; with `id` alone its amount (and currency) change. A checkout
 * already made keeps the amount it was made with (its line holds it), and a subscription its own;
 * only new checkouts and subscriptions take the new amount (docs/compatibility.md).
 */
function changePrices(ctx: AppContext, account: Account, productId: string, inputs: PriceInput[], at: string): void {
  const store = productsStore(ctx.db);
  const added: Array<{ p: PriceInput; i: number }> = [];
  inputs.forEach((p, i) => {
    if (!p.id) return void added.push({ p, i });
    const price = store.price(p.id);
    if (!price || price.product_id !== productId || price.deleted_at) throw invalid({ [`prices_attributes.${i}.id`]: 'is not a price of this product' });
    if (p._destroy) return store.deletePrice(p.id, at);
    // Only the amount and currency change in place (a schema default fills charge_type: equal is no change).
    const fixed = (['charge_type', 'billing_interval', 'billing_interval_count', 'free_trial_interval', 'free_trial_interval_count'] as const).filter(
      (k) => p[k] !== undefined && p[k] !== price[k],
    );
    if (fixed.length) throw invalid({ [`prices_attributes.${i}.${fixed[0]}`]: 'cannot change on an existing price: add a new price and delete this one' });
    const currency = p.currency ?? price.currency;
    assertAccountCurrency(account.currencies, currency, `prices_attributes.${i}.currency`);
    store.changePrice(p.id, centsOf(p, i) ?? price.amount_in_cents, currency);
  });
  for (const p of priceRows(account, productId, added, at)) store.insertPrice(p);
}

export function createProduct(ctx: AppContext, account: Account, body: CreateProductBody): Product {
  const at = isoTime(ctx.clock.now());
  const row: ProductRow = {
    id: newId('prod'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    name: body.name,
    description: body.description ?? null,
    tax_category: body.tax_category ?? 'good',
    status: 'active',
    metadata: JSON.stringify(body.metadata ?? {}),
    page_settings: pageSettings(body),
    inventory_quantity: body.inventory_quantity ?? null,
    created_at: at,
    updated_at: at,
  };
  const prices = priceRows(
    account,
    row.id,
    body.prices_attributes.map((p, i) => ({ p, i })),
    at,
  );
  const store = productsStore(ctx.db);
  return tx(ctx.db, () => {
    store.insertProduct(row);
    for (const p of prices) store.insertPrice(p);
    publishProduct(ctx, row);
    return toProduct(ctx, row);
  });
}

function ownedProduct(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, id: string): ProductRow | undefined {
  const row = productsStore(ctx.db).product(id);
  return row && row.account_id === account.id && (row.live_mode === 1) === account.live_mode ? row : undefined;
}

export function updateProduct(ctx: AppContext, account: Account, id: string, body: UpdateProductBody): Product {
  const store = productsStore(ctx.db);
  return tx(ctx.db, () => {
    const current = ownedProduct(ctx, account, id);
    if (!current) throw notFound('product', id);
    const at = isoTime(ctx.clock.now());
    const next: ProductRow = {
      ...current,
      name: body.name ?? current.name,
      description: body.description !== undefined ? body.description : current.description,
      tax_category: body.tax_category ?? current.tax_category,
      status: body.status ?? current.status,
      metadata: body.metadata ? JSON.stringify(body.metadata) : current.metadata,
      page_settings: pageSettings(body, current.page_settings),
      inventory_quantity: body.inventory_quantity !== undefined ? body.inventory_quantity : (current.inventory_quantity ?? null),
      updated_at: at,
    };
    store.updateProduct(next);
    changePrices(ctx, account, id, body.prices_attributes ?? [], at);
    publishProduct(ctx, next);
    return toProduct(ctx, next);
  });
}

export function getProduct(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, id: string): Product | undefined {
  const row = ownedProduct(ctx, account, id);
  return row ? toProduct(ctx, row) : undefined;
}

/**
 * A product by id alone, for its public page (`storefront_link`), which has no key: the product's id
 * (16 random characters) in a link the merchant shares is what lets one see it, as on the hosted service.
 */
export function productForPage(ctx: AppContext, id: string): Product | undefined {
  const row = productsStore(ctx.db).product(id);
  return row ? toProduct(ctx, row) : undefined;
}

/** A price with its product, when both belong to the account. */
export function getPrice(
  ctx: AppContext,
  account: Pick<Account, 'id' | 'live_mode'>,
  priceId: string,
): { price: Price; product: Product /** `_destroy`ed: kept for what names it, offered no more. */; deleted: boolean } | undefined {
  const price = productsStore(ctx.db).price(priceId);
  if (!price) return undefined;
  const product = getProduct(ctx, account, price.product_id);
  return product ? { price: toPrice(price), product, deleted: !!price.deleted_at } : undefined;
}

/**
 * Inside a paid checkout's transaction: each line of a counted product takes its quantity off the
 * product's inventory (never below 0). A store that learns the product by feed counts nothing.
 */
export function takeProductInventory(ctx: AppContext, lines: Array<{ product_id: string | null; quantity: number }>): void {
  const at = isoTime(ctx.clock.now());
  const store = productsStore(ctx.db);
  for (const l of lines) if (l.product_id) store.takeInventory(l.product_id, l.quantity, at);
}

export function listProducts(ctx: AppContext, accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: Product[]; total: number } {
  const { rows, total } = productsStore(ctx.db).list(accountIds, liveMode, limit, offset);
  return { rows: rows.map((r) => toProduct(ctx, r)), total };
}
