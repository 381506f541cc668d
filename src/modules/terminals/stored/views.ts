import type { Static } from '@sinclair/typebox';
import type { AppContext } from '../../../context.js';
import { AccountsService } from '../../../accounts/service.js';
import { notFound } from '../../../errors.js';
import { auditEntry } from './changes.js';
import { centralStoredStore, type CentralAuditRow } from './central-store.js';
import { activeOverrideOf, capLimits, capsOf, policyOf, standingCapsOf, terminalCapsOf } from './policy.js';
import type { OfflineAuditSchema, OfflinePolicySchema, StoredPaymentSchema } from './schema.js';
import { storedPaymentsStore, type CentralStoredPaymentRow, type StoredPaymentRow } from './store.js';

/**
 * The API's reads of stored payments (docs/stored-payments.md "Through the API"). A store answers
 * from its own rows; a central from what its stores reported (central_stored_payments,
 * central_offline_audit), across all of them.
 */

type Scope = { accountIds: string[]; liveMode: boolean };
export type StoredPaymentView = Static<typeof StoredPaymentSchema>;
export type OfflineAuditView = Static<typeof OfflineAuditSchema>;
export type OfflinePolicyView = Static<typeof OfflinePolicySchema>;

const isCentral = (ctx: AppContext) => ctx.config.role === 'central';

function storedView(r: StoredPaymentRow | (CentralStoredPaymentRow & Partial<StoredPaymentRow>)): StoredPaymentView {
  const central = 'origin_store_id' in r;
  return {
    id: r.id,
    object: 'stored_payment',
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    store_id: central ? (r as CentralStoredPaymentRow).origin_store_id : null,
    terminal_id: r.terminal_id,
    command_id: r.command_id,
    checkout_id: r.checkout_id,
    payment_intent_id: r.payment_intent_id,
    offline_reference: r.offline_reference,
    status: r.status,
    // A central keeps a stored payment only once it is final.
    final: central || (r as StoredPaymentRow).final === 1,
    amount_in_cents: r.amount_in_cents,
    currency: r.currency,
    card: r.card_last4 ? { network: r.card_network, last4: r.card_last4 } : null,
    over_cap: r.over_cap ? (JSON.parse(r.over_cap) as string[]) : null,
    reason: r.reason,
    late_outcome: r.late_outcome ?? null,
    stored_at: r.stored_at,
    forward_by: r.forward_by,
    forwarded_at: r.forwarded_at,
    settled_at: r.settled_at,
  };
}

export function listStoredPayments(ctx: AppContext, scope: Scope, f: { status?: string; terminal_id?: string }, limit: number, offset: number) {
  const page = isCentral(ctx)
    ? centralStoredStore(ctx.db).paymentsPage(scope.accountIds, scope.liveMode, f, limit, offset)
    : storedPaymentsStore(ctx.db).page(scope.accountIds, scope.liveMode, f, limit, offset);
  return { rows: page.rows.map(storedView), total: page.total };
}

export function getStoredPayment(ctx: AppContext, scope: Scope, id: string): StoredPaymentView {
  const row = isCentral(ctx) ? centralStoredStore(ctx.db).paymentById(id) : storedPaymentsStore(ctx.db).byId(id);
  if (!row || !scope.accountIds.includes(row.account_id) || (row.live_mode === 1) !== scope.liveMode) throw notFound('stored payment', id);
  return storedView(row);
}

function centralAuditView(r: CentralAuditRow): OfflineAuditView {
  return { ...auditEntry({ ...r, seq: 0 }), store_id: r.origin_store_id };
}

export function listOfflineAudit(ctx: AppContext, scope: Scope, limit: number, offset: number) {
  if (isCentral(ctx)) {
    const page = centralStoredStore(ctx.db).auditPage(scope.accountIds, scope.liveMode, limit, offset);
    return { rows: page.rows.map(centralAuditView), total: page.total };
  }
  const page = storedPaymentsStore(ctx.db).auditPage(scope.accountIds, scope.liveMode, limit, offset);
  return { rows: page.rows.map((r) => ({ ...auditEntry(r), store_id: null })), total: page.total };
}

/** The offline policy of each account read (and of one terminal when named): in force at a store, as reported at a central. */
export function offlinePolicies(ctx: AppContext, scope: Scope, terminalId: string | null = null): OfflinePolicyView[] {
  const accounts = new AccountsService(ctx.db, ctx.clock);
  return scope.accountIds.flatMap((id): OfflinePolicyView[] => {
    const account = accounts.account(id);
    if (!account || account.live_mode !== scope.liveMode) return [];
    const base = { account_id: account.id, live_mode: account.live_mode, terminal_id: terminalId };
    if (isCentral(ctx)) {
      const reported = centralStoredStore(ctx.db)
        .latest([account.id], account.live_mode, terminalId)
        .map((r) => ({
          store_id: r.origin_store_id,
          terminal_id: r.terminal_id,
          action: r.action,
          actor: r.actor,
          at: r.at,
          caps: JSON.parse(r.after) as Record<string, unknown>,
        }));
      return [{ ...base, reported }];
    }
    const o = activeOverrideOf(ctx, account);
    return [
      {
        ...base,
        currency: account.default_currency,
        standing_caps: standingCapsOf(ctx, account),
        terminal_caps: terminalId ? terminalCapsOf(ctx, terminalId) : null,
        caps: capsOf(ctx, account),
        override: o ? { id: o.id, until: o.until_at, actor: o.actor, reason: o.reason, caps: JSON.parse(o.caps) as Record<string, number> } : null,
        policy: policyOf(ctx, account, terminalId),
        limits: capLimits(ctx, account, terminalId, 0, account.default_currency),
      },
    ];
  });
}
