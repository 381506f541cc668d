import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import { newId } from '../../ids.js';
import { ApiError, invalid } from '../../errors.js';
import type { Account } from '../../accounts/service.js';
import { getUser, userIdByEmail } from '../users/service.js';
import { customersStore, type CustomerDetails, type CustomerRow } from './store.js';

export interface Customer {
  id: string;
  account_id: string;
  live_mode: boolean;
  email: string | null;
  full_name: string | null;
  phone: string | null;
  tax_id: string | null;
  address: string | null;
  metadata: Record<string, unknown> | null;
  created_at: string;
}

/** The hosted answer adds its names for posd's fields (`name` = `full_name`, `nit` = `tax_id`) and the user. */
export interface CustomerView extends Customer {
  name: string | null;
  nit: string | null;
  user_id: string | null;
}

export interface CustomerInput {
  email?: string | null;
  name?: string | null;
  full_name?: string | null;
  phone?: string | null;
  /** posd's name; the hosted service's is `nit`. Both name the same value (sending both: they must agree). */
  tax_id?: string | null;
  nit?: string | null;
  address?: string | null;
  metadata?: Record<string, unknown> | null;
}

function toCustomer(r: CustomerRow): Customer {
  return {
    id: r.id,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    email: r.email,
    full_name: r.full_name,
    phone: r.phone,
    tax_id: r.tax_id,
    address: r.address,
    metadata: r.metadata === null ? null : (JSON.parse(r.metadata) as Record<string, unknown>),
    created_at: r.created_at,
  };
}

/** The API's answer for a customer: posd's fields plus the hosted names (hosted-api.md section 5). */
export function customerView(ctx: AppContext, c: Customer): CustomerView {
  return { ...c, name: c.full_name, nit: c.tax_id, user_id: c.email ? (userIdByEmail(ctx, c.account_id, c.email) ?? null) : null };
}

/** The two names of one field must not disagree (a client sending both means one value). */
function oneOf(input: Record<string, unknown>, names: [string, string]): string | null | undefined {
  const [a, b] = names;
  const va = input[a] as string | null | undefined;
  const vb = input[b] as string | null | undefined;
  if (va !== undefined && vb !== undefined && va !== vb) throw invalid({ [b]: `must equal ${a} when both are sent` });
  return va !== undefined ? va : vb;
}

/** The details a body sets; `undefined` where the body does not name the field. */
function detailsOf(input: CustomerInput): { [K in keyof CustomerDetails]: CustomerDetails[K] | undefined } {
  const rec = input as Record<string, unknown>;
  const metadata = input.metadata;
  return {
    full_name: oneOf(rec, ['full_name', 'name']),
    phone: input.phone,
    tax_id: oneOf(rec, ['tax_id', 'nit']),
    address: input.address,
    metadata: metadata === undefined ? undefined : metadata === null ? null : JSON.stringify(metadata),
  };
}

/** A merchant's customer directory is shared by its live account and its sandbox. */
export function merchantOf(account: Pick<Account, 'id' | 'sandbox_of'>): string {
  return account.sandbox_of ?? account.id;
}

function normalizeEmail(email: string | null | undefined): string | null {
  const e = email?.trim().toLowerCase();
  return e ? e : null;
}

/**
 * Finds the merchant's customer with that e-mail or creates one (gaps.md: the e-mail is the natural
 * key). A test key finds only test customers; a live key finds a live customer first, then a test
 * one, which becomes live with its first real payment. Details missing on a found customer are
 * filled in; present ones are never overwritten by a checkout.
 */
export function findOrCreateCustomer(ctx: AppContext, account: Account, input: CustomerInput): Customer {
  return tx(ctx.db, () => findOrCreateCustomerRow(ctx, account, input).customer);
}

export function findOrCreateCustomerRow(ctx: AppContext, account: Account, input: CustomerInput): { customer: Customer; created: boolean } {
  const store = customersStore(ctx.db);
  const merchant = merchantOf(account);
  const email = normalizeEmail(input.email);
  const given = detailsOf(input);
  const details: CustomerDetails = {
    full_name: given.full_name ?? null,
    phone: given.phone ?? null,
    tax_id: given.tax_id ?? null,
    address: given.address ?? null,
    metadata: given.metadata ?? null,
  };
  if (email) {
    const found = (account.live_mode ? store.byEmail(merchant, true, email) : undefined) ?? store.byEmail(merchant, false, email);
    if (found) {
      if (account.live_mode && found.account_id !== account.id && found.live_mode === 0) store.claim(found.id, account.id);
      store.fill(found.id, details);
      return { customer: toCustomer(store.byId(found.id)!), created: false };
    }
  }
  const row = {
    id: newId('cus'),
    account_id: account.id,
    // Every customer starts as a test customer: it becomes live with its first real payment (spec 5 rule 7).
    live_mode: 0,
    merchant_id: merchant,
    email,
    ...details,
    created_at: isoTime(ctx.clock.now()),
  };
  store.insert(row);
  return { customer: toCustomer(store.byId(row.id)!), created: true };
}

/**
 * `PUT`/`PATCH /customers/{id}` (hosted-api.md section 5: the route exists, its body is the create
 * fields). Only the fields named change; null clears one. A new e-mail must not be another
 * customer's of the same merchant and environment (422 `email_taken`).
 */
export function updateCustomer(ctx: AppContext, account: Account, id: string, input: CustomerInput): Customer {
  return tx(ctx.db, () => {
    const current = requireCustomer(ctx, account, id);
    const store = customersStore(ctx.db);
    const row = store.byId(current.id)!;
    const given = detailsOf(input);
    let email = row.email;
    if (input.email !== undefined) {
      email = normalizeEmail(input.email);
      const other = email ? store.byEmail(row.merchant_id, row.live_mode === 1, email) : undefined;
      if (other && other.id !== row.id) throw new ApiError('email_taken');
    }
    const pick = <K extends keyof CustomerDetails>(k: K): CustomerDetails[K] => (given[k] === undefined ? row[k] : given[k]) as CustomerDetails[K];
    store.update(row.id, {
      email,
      full_name: pick('full_name'),
      phone: pick('phone'),
      tax_id: pick('tax_id'),
      address: pick('address'),
      metadata: pick('metadata'),
    });
    return toCustomer(store.byId(row.id)!);
  });
}

export type CustomerLookup = { customer: Customer } | { customer?: undefined; reason: 'missing' | 'other_environment' };

/**
 * Spec 5 rule 7: a test key resolves only test customers (a customer that became live answers 401
 * on /customers); a live key resolves the merchant's live customers and the live account's own
 * customers on their way to their first real payment, never a customer only its sandbox has met.
 */
export function lookupCustomer(ctx: AppContext, account: Account, id: string): CustomerLookup {
  const row = customersStore(ctx.db).byId(id);
  if (!row || row.merchant_id !== merchantOf(account)) return { reason: 'missing' };
  if (!account.live_mode && row.live_mode === 1) return { reason: 'other_environment' };
  if (account.live_mode && row.live_mode === 0 && row.account_id !== row.merchant_id) return { reason: 'other_environment' };
  return { customer: toCustomer(row) };
}

export function getCustomer(ctx: AppContext, account: Account, id: string): Customer | undefined {
  return lookupCustomer(ctx, account, id).customer;
}

/** The customer, or the /customers answer for an id that does not resolve: 404, or 401 for the other environment. */
export function requireCustomer(ctx: AppContext, account: Account, id: string): Customer {
  const found = lookupCustomer(ctx, account, id);
  if (found.customer) return found.customer;
  if (found.reason === 'other_environment') throw new ApiError('wrong_environment');
  throw new ApiError('not_found', { message: `No customer with id ${id}.` });
}

/** Called inside the payment's transaction: the first real payment makes a customer live. */
export function markCustomerLive(ctx: AppContext, customerId: string): boolean {
  return customersStore(ctx.db).makeLive(customerId, isoTime(ctx.clock.now()));
}

export function listCustomers(
  ctx: AppContext,
  accounts: Account[],
  liveMode: boolean,
  limit: number,
  offset: number,
  ofUser?: { accountId: string; email: string },
): { rows: Customer[]; total: number } {
  const merchants = [...new Set(accounts.map(merchantOf))];
  const { rows, total } = customersStore(ctx.db).list(merchants, liveMode, limit, offset, ofUser);
  return { rows: rows.map(toCustomer), total };
}

/**
 * The customers a user (`us_`) is, as `customerView` names its `user_id`: those of the user's account
 * with the user's e-mail. An unknown user is none (the list filter then matches nothing).
 */
export function userFilter(ctx: AppContext, accountIds: string[], liveMode: boolean, userId: string): { accountId: string; email: string } {
  const user = getUser(ctx, accountIds, liveMode, userId);
  return user ? { accountId: user.account_id, email: user.email } : { accountId: '', email: '' };
}

/** The ids of a user's customers (`GET /checkouts?user_id=`). */
export function customerIdsOfUser(ctx: AppContext, accounts: Account[], liveMode: boolean, userId: string): string[] {
  const of = userFilter(
    ctx,
    accounts.map((a) => a.id),
    liveMode,
    userId,
  );
  if (!of.accountId) return [];
  return listCustomers(ctx, accounts, liveMode, 100, 0, of).rows.map((c) => c.id);
}

/** Any customer by id, unscoped: for documents built from records that already passed scoping. */
export function customerById(ctx: AppContext, id: string): Customer | undefined {
  const row = customersStore(ctx.db).byId(id);
  return row ? toCustomer(row) : undefined;
}
