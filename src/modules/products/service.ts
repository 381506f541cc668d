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
  appendFeedChange(ctx.db, { kind: 'product', accountId: row.account_id, liveMode: row.live_mode === 1, objectId: row.id, payload: { ...payload }, createdAt: row.updated_at });
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
import { PAGE_SETTING_DEFAULTS, type CreateProductBody, type Price, type PriceInput, type Product, type UpdateProductBody } from './schema.js';

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
    created_at: r.created_at,
  };
}

function toProduct(ctx: AppContext, r: ProductRow): Product {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    name: r.name,
    description: r.description,
    tax_category: r.tax_category,
    status: r.status,
    metadata: JSON.parse(r.metadata),
    ...PAGE_SETTING_DEFAULTS,
    ...(JSON.parse(r.page_settings ?? '{}') as Partial<Product>),
    prices: productsStore(ctx.db).prices(r.id).map(toPrice),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

function priceRows(account: Account, productId: string, inputs: PriceInput[], at: string): PriceRow[] {
  return inputs.map((p, i) => {
    assertAccountCurrency(account.currencies, p.currency, `prices_attributes.${i}.currency`);
    const recurring = p.charge_type === 'recurring';
    if (recurring && !p.billing_interval) throw invalid({ [`prices_attributes.${i}.billing_interval`]: 'is required for a recurring price' });
    // `""` / 0 are the hosted service's "no trial" (its own answers carry them).
    const trial = p.free_trial_interval && p.free_trial_interval_count !== 0 ? p.free_trial_interval : null;
    if (trial && !recurring) throw invalid({ [`prices_attributes.${i}.free_trial_interval`]: 'is only for a recurring price' });
    if (!p.free_trial_interval && p.free_trial_interval_count) throw invalid({ [`prices_attributes.${i}.free_trial_interval_count`]: 'needs free_trial_interval' });
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

/** The page settings a body names, over the ones already stored. */
function pageSettings(body: Partial<Record<keyof typeof PAGE_SETTING_DEFAULTS, unknown>>, current = '{}'): string {
  const out: Record<string, unknown> = JSON.parse(current);
  for (const k of Object.keys(PAGE_SETTING_DEFAULTS) as Array<keyof typeof PAGE_SETTING_DEFAULTS>) if (body[k] !== undefined) out[k] = body[k];
  return JSON.stringify(out);
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
    created_at: at,
    updated_at: at,
  };
  const prices = priceRows(account, row.id, body.prices_attributes, at);
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
      updated_at: at,
    };
    store.updateProduct(next);
    for (const p of priceRows(account, id, body.prices_attributes ?? [], at)) store.insertPrice(p);
    publishProduct(ctx, next);
    return toProduct(ctx, next);
  });
}

export function getProduct(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, id: string): Product | undefined {
  const row = ownedProduct(ctx, account, id);
  return row ? toProduct(ctx, row) : undefined;
}

/** A price with its product, when both belong to the account. */
export function getPrice(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, priceId: string): { price: Price; product: Product } | undefined {
  const price = productsStore(ctx.db).price(priceId);
  if (!price) return undefined;
  const product = getProduct(ctx, account, price.product_id);
  return product ? { price: toPrice(price), product } : undefined;
}

export function listProducts(ctx: AppContext, accountIds: string[], liveMode: boolean, limit: number, offset: number): { rows: Product[]; total: number } {
  const { rows, total } = productsStore(ctx.db).list(accountIds, liveMode, limit, offset);
  return { rows: rows.map((r) => toProduct(ctx, r)), total };
}
