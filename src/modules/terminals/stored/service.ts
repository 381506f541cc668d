import type { AppContext } from '../../../context.js';
import { AccountsService, type Account } from '../../../accounts/service.js';
import { tx } from '../../../db/database.js';
import { isoTime } from '../../../clock.js';
import { newId } from '../../../ids.js';
import { finishStoredTerminalPayment, forwardStoredTerminalPayment, startStoredTerminalPayment } from '../commands/payments.js';
import { settleStoredCommand } from '../commands/stored-outcome.js';
import { commandsStore } from '../commands/store.js';
import { appendSyncRecord } from '../../../outbox/sync-records.js';
import { forwardEvent, storedPaymentFinal, storedPaymentInitial, storedPaymentNext, type StoredPaymentStatus } from './machine.js';
import { capLimits, capsPassed, forwardByFrom, policyOf, type PolicyView } from './policy.js';
import { ApiError } from '../../../errors.js';
import { centralTarget } from '../../../sync/status.js';
import { STATE } from '../../../sync/shared/state.js';
import { storeSide } from '../../../sync/store/sync-store.js';
import { storedPaymentsStore, type CentralStoredPaymentRow, type StoredPaymentRow } from './store.js';
import { centralStoredStore } from './central-store.js';

export interface StoredInput {
  accountId: string;
  liveMode: boolean;
  terminalId: string;
  commandId: string;
  checkoutId: string;
  amountInCents: number;
  currency: string;
  offlineReference: string;
  card: { network: string; last4: string } | null;
  at: string;
}

function accountOf(ctx: AppContext, id: string): Account {
  const account = new AccountsService(ctx.db, ctx.clock).account(id);
  if (!account) throw new Error(`stored payment: account ${id} is gone`);
  return account;
}

/**
 * Inside the caller's transaction (the command's `stored` result): records the payment the
 * terminal approved offline, with the caps it passed if any. A stored payment over a cap is still
 * a card the terminal holds: it is recorded as what it is and flagged, never dropped.
 */
export function recordStoredPayment(ctx: AppContext, input: StoredInput): StoredPaymentRow {
  const store = storedPaymentsStore(ctx.db);
  const existing = store.byCommand(input.commandId);
  if (existing) return existing;
  const account = accountOf(ctx, input.accountId);
  const over = capsPassed(ctx, account, input.amountInCents, input.currency, input.terminalId);
  const status = storedPaymentInitial();
  const id = newId('sp');
  // The sale waits for the card's outcome as a pending payment (intent.pending), like a bank transfer.
  const paymentIntentId = startStoredTerminalPayment(ctx, account, input.checkoutId, input.card, input.at);
  if (paymentIntentId === null) {
    ctx.log.warn(
      { stored_payment_id: id, command_id: input.commandId, checkout_id: input.checkoutId },
      'stored payment of a checkout that waits for no payment',
    );
  }
  store.insert({
    id,
    account_id: input.accountId,
    live_mode: input.liveMode ? 1 : 0,
    terminal_id: input.terminalId,
    command_id: input.commandId,
    checkout_id: input.checkoutId,
    offline_reference: input.offlineReference,
    status,
    final: storedPaymentFinal(status) ? 1 : 0,
    amount_in_cents: input.amountInCents,
    currency: input.currency,
    card_network: input.card?.network ?? null,
    card_last4: input.card?.last4 ?? null,
    over_cap: over.length ? JSON.stringify(over) : null,
    stored_at: input.at,
    forward_by: forwardByFrom(ctx, account, Date.parse(input.at), input.terminalId),
    payment_intent_id: paymentIntentId,
  });
  // A terminal stores only when it cannot reach its processor: that link is down from now (closed
  // by the first forward result), for the outage report.
  storeSide(ctx.db).openOutage('processor', input.at);
  if (over.length) {
    ctx.log.warn({ stored_payment_id: id, command_id: input.commandId, over_cap: over }, 'a terminal stored a payment over its offline caps');
  }
  return store.byId(id)!;
}

export interface ForwardInput {
  terminalId: string;
  commandId: string;
  offlineReference: string;
  outcome: 'forwarded' | 'approved' | 'declined' | 'expired';
  authorizationCode: string | null;
  processorReference: string | null;
  reason: string | null;
  card: { network: string; last4: string } | null;
  at: string;
}

export type ForwardApplied = { known: false } | { known: true; changed: boolean; row: StoredPaymentRow };

/** Moves one stored payment and performs what its new state means, inside the caller's transaction. */
function moveInTx(
  ctx: AppContext,
  row: StoredPaymentRow,
  to: StoredPaymentStatus,
  detail: Omit<ForwardInput, 'terminalId' | 'commandId' | 'offlineReference' | 'outcome'>,
): boolean {
  const final = storedPaymentFinal(to);
  // The processor has it: `forwarded`, or its answer reported at once (`expired` is the terminal's or posd's own giving up).
  const reachedProcessor = to === 'forwarded' || to === 'approved' || to === 'declined';
  const moved = storedPaymentsStore(ctx.db).move({
    id: row.id,
    from: row.status,
    status: to,
    final: final ? 1 : 0,
    forwarded_at: reachedProcessor ? detail.at : null,
    settled_at: final ? detail.at : null,
    authorization_code: detail.authorizationCode,
    processor_reference: detail.processorReference,
    reason: detail.reason,
    card_network: detail.card?.network ?? null,
    card_last4: detail.card?.last4 ?? null,
    updated_at: detail.at,
  });
  if (!moved) return false;
  if (reachedProcessor) forwardStoredTerminalPayment(ctx, row.payment_intent_id, detail.at);
  if (!final) return true;
  const account = accountOf(ctx, row.account_id);
  // Approved: the pending payment succeeds (ledger, intent.succeeded, terminal_payment record).
  // Declined or expired: it fails (intent.failed, the record) and the sale is owed again.
  finishStoredTerminalPayment(ctx, account, {
    checkoutId: row.checkout_id,
    paymentIntentId: row.payment_intent_id,
    failureReason: detail.reason ?? (to === 'expired' ? 'offline_payment_expired' : 'declined'),
    result: {
      outcome: to === 'approved' ? 'approved' : 'declined',
      authorization_code: detail.authorizationCode,
      card: detail.card ?? (row.card_last4 ? { network: row.card_network ?? 'unknown', last4: row.card_last4 } : null),
      processor_reference: detail.processorReference,
      reason: detail.reason,
    },
  });
  // The till's command says `stored` until now: consumed (approved) or failed (declined, expired).
  settleStoredCommand(ctx, row.command_id, to === 'approved', detail.at);
  // The central learns the card's final state (after the payment's own record, in the same transaction).
  const settled = storedPaymentsStore(ctx.db).byId(row.id)!;
  appendSyncRecord(ctx.db, {
    kind: 'stored_payment',
    accountId: account.id,
    liveMode: account.live_mode,
    createdAt: detail.at,
    payload: storedPaymentRecord(settled, commandsStore(ctx.db).byId(row.command_id)),
  });
  return true;
}

/** The `stored_payment` record of a final stored payment: what the central keeps of it (stored/sync.ts). */
export function storedPaymentRecord(
  row: StoredPaymentRow,
  sale?: { external_id: string | null; description: string | null; tax_id: string | null },
): Record<string, unknown> {
  return {
    id: row.id,
    terminal_id: row.terminal_id,
    command_id: row.command_id,
    checkout_id: row.checkout_id,
    payment_intent_id: row.payment_intent_id,
    offline_reference: row.offline_reference,
    status: row.status,
    amount_in_cents: row.amount_in_cents,
    currency: row.currency,
    card_network: row.card_network,
    card_last4: row.card_last4,
    over_cap: row.over_cap ? (JSON.parse(row.over_cap) as string[]) : null,
    reason: row.reason,
    stored_at: row.stored_at,
    forward_by: row.forward_by,
    forwarded_at: row.forwarded_at,
    settled_at: row.settled_at,
    external_id: sale?.external_id ?? null,
    description: sale?.description ?? null,
    tax_id: sale?.tax_id ?? null,
  };
}

/**
 * A terminal's forward result, in one transaction. Unknown reference (or one that names another
 * command): `known: false`, nothing written, not acknowledged. A result the machine refuses (a
 * repeat, or an outcome after the payment is final) changes nothing; a contradicting final outcome
 * is kept as `late_outcome` for the manager.
 */
export function applyForwardResult(ctx: AppContext, input: ForwardInput): ForwardApplied {
  const store = storedPaymentsStore(ctx.db);
  return tx(ctx.db, () => {
    const row = store.byReference(input.terminalId, input.offlineReference);
    if (!row || row.command_id !== input.commandId) return { known: false as const };
    // A forward result means this terminal reaches its processor again.
    processorAnswered(ctx, input.at);
    const to = storedPaymentNext(row.status, forwardEvent(input.outcome));
    if (to === null) {
      if (row.final === 1 && input.outcome !== row.status && input.outcome !== 'forwarded') {
        store.setLateOutcome(row.id, input.outcome, input.at);
        ctx.log.warn({ stored_payment_id: row.id, status: row.status, late_outcome: input.outcome }, 'forward result after the stored payment was final');
      }
      return { known: true as const, changed: false, row: store.byId(row.id)! };
    }
    const changed = moveInTx(ctx, row, to, input);
    return { known: true as const, changed, row: store.byId(row.id)! };
  });
}

/** Stored payments never forwarded by their deadline become `expired`; returns them. */
export function expireDuePayments(ctx: AppContext): StoredPaymentRow[] {
  const store = storedPaymentsStore(ctx.db);
  const at = isoTime(ctx.clock.now());
  return tx(ctx.db, () => {
    const expired: StoredPaymentRow[] = [];
    for (const row of store.due(at)) {
      const to = storedPaymentNext(row.status, { type: 'EXPIRED' });
      if (to && moveInTx(ctx, row, to, { authorizationCode: null, processorReference: null, reason: 'not_forwarded_in_time', card: null, at })) {
        expired.push(store.byId(row.id)!);
      }
    }
    return expired;
  });
}

/**
 * Whether this box is offline: a store whose central is configured and whose last sync attempt
 * failed. Its terminals most likely cannot reach their processor either (same uplink).
 */
export function boxOffline(ctx: AppContext): boolean {
  if (ctx.config.role !== 'store' || centralTarget(ctx.config, ctx.db) === null) return false;
  return storeSide(ctx.db).state(STATE.lastAttemptOk) === '0';
}

/**
 * Before a charge reaches the terminal: while the box is offline, a charge the terminal could only
 * store, and that would pass a cap, is refused with the cap's name. Online, nothing is checked:
 * the processor decides.
 */
export function refuseOverCapWhileOffline(ctx: AppContext, account: Account, terminalId: string, amountInCents: number, currency: string): void {
  if (!boxOffline(ctx)) return;
  const limits = capLimits(ctx, account, terminalId, amountInCents, currency);
  const passed = [...new Set(limits.filter((l) => l.passed).map((l) => l.cap))];
  if (passed.length === 0) return;
  // `limits`: every cap in force for this terminal, its value and what is left, so the till can say why.
  throw new ApiError('offline_cap_reached', { extra: { reason: passed[0], caps: passed, limits } });
}

/** When the policies next change by the clock alone (an override's end, a deadline), or null. */
export function nextPolicyTimeChange(ctx: AppContext): string | null {
  return storedPaymentsStore(ctx.db).nextTimeChange(isoTime(ctx.clock.now()));
}

export function nextForwardDeadline(ctx: AppContext): string | null {
  return storedPaymentsStore(ctx.db).nextDeadline();
}

export function storedPaymentOfCommand(ctx: AppContext, commandId: string): StoredPaymentRow | undefined {
  return storedPaymentsStore(ctx.db).byCommand(commandId);
}

/** A terminal's stored payments whose outcome posd still waits for (a nexo link asks the terminal for them). */
export function waitingStoredOfTerminal(ctx: AppContext, terminalId: string): Array<{ commandId: string; offlineReference: string }> {
  return storedPaymentsStore(ctx.db)
    .openOfTerminal(terminalId)
    .map((r) => ({ commandId: r.command_id, offlineReference: r.offline_reference }));
}

/** Stored payments over a cap, still waiting: the terminal decided alone (a nexo terminal never hears posd's caps). */
export function openOverCapPayments(ctx: AppContext): StoredPaymentRow[] {
  return storedPaymentsStore(ctx.db).openOverCap();
}

export function flaggedStoredPayments(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>): StoredPaymentRow[] {
  return storedPaymentsStore(ctx.db).flagged(account.id, account.live_mode);
}

/** What one terminal may store now (its account's caps and its own); without a terminal, the account's. */
export function offlinePolicyFor(ctx: AppContext, accountId: string, terminalId: string | null = null): PolicyView {
  return policyOf(ctx, accountOf(ctx, accountId), terminalId);
}

/**
 * An online approval: a terminal reaches its processor, so the processor outage (opened by the
 * first stored payment) is over, even if no stored payment is ever forwarded. Inside the caller's transaction.
 */
export function processorAnswered(ctx: AppContext, at: string): void {
  storeSide(ctx.db).closeOutage('processor', at);
}

/** Every stored payment of an account declined or expired later (the sales owed again), oldest first. */
/** At a central: its stores' stored payments declined or expired later, oldest first (stored/central-store.ts). */
export function centralDeclinedLater(ctx: AppContext, scope: { accountIds: string[]; liveMode: boolean }, limit = 1000): CentralStoredPaymentRow[] {
  return centralStoredStore(ctx.db).declinedLater(scope.accountIds, scope.liveMode, limit);
}

export function declinedLaterPayments(ctx: AppContext, account: Pick<Account, 'id' | 'live_mode'>, limit = 1000): StoredPaymentRow[] {
  const store = storedPaymentsStore(ctx.db);
  const rows = [...store.list([account.id], account.live_mode, 'declined', limit), ...store.list([account.id], account.live_mode, 'expired', limit)];
  return rows.sort((a, b) => a.seq - b.seq).slice(-limit);
}

export function storedPaymentsBetween(ctx: AppContext, fromIso: string, untilIso: string): StoredPaymentRow[] {
  return storedPaymentsStore(ctx.db).storedBetween(fromIso, untilIso);
}

/** What waits stored or forwarded now, installation-wide, by state and currency. */
export function openStoredPayments(ctx: AppContext) {
  return storedPaymentsStore(ctx.db).openByStatus();
}

export type { CentralStoredPaymentRow, StoredPaymentRow } from './store.js';
export { activeOverrideOf, capsOf } from './policy.js';
export { storedNearLimits, type NearCap, type NearLimits, type NearWindow } from './nearing.js';
export { allowOfflineUntil, revokeOfflineOverrides } from './changes.js';
export { setAccountCaps, setTerminalCaps, offlineAudit, type PolicyChange } from './changes.js';
export { getStoredPayment, listOfflineAudit, listStoredPayments, offlinePolicies } from './views.js';
export { centralStoredStore } from './central-store.js';
