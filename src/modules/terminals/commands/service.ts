import type { AppContext } from '../../../context.js';
import { afterCommit } from '../../../db/group-commit.js';
import { accountsOf, type Account } from '../../../accounts/service.js';
import { tx } from '../../../db/database.js';
import { isoTime } from '../../../clock.js';
import { newId } from '../../../ids.js';
import { ApiError, invalid, notFound } from '../../../errors.js';
import { findTerminal } from '../service.js';
import { terminalSignals } from '../signals.js';
import { applyCommandEvent, initialCommand, terminalDone, type CommandContext, type CommandEvent, type SettleParams, type Transitioned } from './machine.js';
import { commandsStore, type CommandFilters, type CommandRow, type CommandRowWithTerminal } from './store.js';
import { checkoutForCommand, checkoutStatusOf, markCheckoutInProgress, settleTerminalPayment } from './payments.js';
import type { CommandView, CreateCommandBody } from './schema.js';
import { processorAnswered, recordStoredPayment, refuseOverCapWhileOffline } from '../stored/service.js';
import { MAX_LINE_CENTS, MINIMUM_CHARGE_CENTS } from '../../../money.js';

/** The checkout's own status; derived from the command only if the checkout cannot be read. */
function checkoutStatus(ctx: AppContext, row: CommandRow): string {
  const status = checkoutStatusOf(ctx, row.account_id, row.live_mode === 1, row.checkout_id);
  if (status) return status;
  switch (row.status) {
    case 'consumed':
      return 'paid';
    case 'failed':
      return 'failed';
    case 'dispatched':
    case 'cancel_requested':
    case 'stored':
      return 'payment_in_progress';
    default:
      return 'unpaid';
  }
}

export function commandView(ctx: AppContext, row: CommandRowWithTerminal): CommandView {
  return {
    id: row.id,
    external_id: row.external_id,
    status: row.status,
    // A stored card is not final for the till until its processor decides (the `final` column
    // says the terminal is done with it).
    final: row.final === 1 && row.status !== 'stored',
    terminal_id: row.terminal_id,
    amount_in_cents: row.amount_in_cents,
    currency: row.currency,
    installments: row.installments,
    description: row.description,
    show_post_payment_screens: row.show_post_payment_screens === 1,
    print_receipt: row.print_receipt === 1,
    tax_id: row.tax_id,
    terminal_availability: row.terminal_availability,
    checkout_id: row.checkout_id,
    checkout_url: row.checkout_url,
    checkout_status: checkoutStatus(ctx, row),
    cancellation_requested_at: row.cancellation_requested_at,
    canceled_at: row.canceled_at,
    account_id: row.account_id,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function commandContext(row: CommandRow): CommandContext {
  return (JSON.parse(row.snapshot) as { context: CommandContext }).context;
}

/** A decimal amount in currency units as exact cents; 400 when it has more than two decimals. */
function decimalToCents(amount: number): number {
  const cents = Math.round(amount * 100);
  if (Math.abs(cents - amount * 100) > 1e-6) throw invalid({ amount: 'must have at most two decimals' });
  return cents;
}

interface Normalized {
  amount: number;
  currency: string;
  items: Array<{ name: string; amount_in_cents: number; quantity: number }> | null;
}

function normalizeAmount(account: Account, body: CreateCommandBody): Normalized {
  if (body.amount !== undefined && body.amount_in_cents !== undefined) {
    throw invalid({ amount: 'send amount or amount_in_cents, not both', amount_in_cents: 'send amount or amount_in_cents, not both' });
  }
  let amount = body.amount_in_cents ?? (body.amount !== undefined ? decimalToCents(body.amount) : undefined);
  const items = body.items?.map((i) => ({ name: i.name, amount_in_cents: i.amount_in_cents, quantity: i.quantity ?? 1 })) ?? null;
  if (items) {
    const sum = items.reduce((s, i) => s + i.amount_in_cents * i.quantity, 0);
    if (amount !== undefined && amount !== sum) {
      throw invalid({ [body.amount !== undefined ? 'amount' : 'amount_in_cents']: `must equal the sum of items (${sum} cents)` });
    }
    amount = sum;
  }
  if (amount === undefined) throw invalid({ amount_in_cents: 'is required (or amount, or items)' });
  const currency = body.currency ?? account.default_currency;
  const minimum = MINIMUM_CHARGE_CENTS[currency as keyof typeof MINIMUM_CHARGE_CENTS];
  if (minimum === undefined) throw invalid({ currency: 'must be GTQ or USD' });
  const field = items ? 'items' : body.amount !== undefined ? 'amount' : 'amount_in_cents';
  if (amount < minimum) throw invalid({ [field]: `must be at least ${minimum} cents ${currency}` });
  if (!items && amount > MAX_LINE_CENTS) throw invalid({ [field]: `must be at most ${MAX_LINE_CENTS} cents` });
  return { amount, currency, items };
}

/**
 * POST /terminal_session_commands. 201 for a new command; 200 with the existing one for the same
 * external_id, amount and terminal; 422 `external_id_reused` otherwise. A new command supersedes
 * the terminal's pending commands that were never handed to it.
 */
export function createCommand(ctx: AppContext, account: Account, body: CreateCommandBody): { command: CommandView; created: boolean } {
  const { amount, currency, items } = normalizeAmount(account, body);
  const terminal = findTerminal(ctx, { accountIds: [account.id], liveMode: account.live_mode }, body.terminal_id);
  if (!terminal) throw invalid({ terminal_id: `no terminal with id ${body.terminal_id}` });
  const store = commandsStore(ctx.db);
  // Read once: nothing runs between this read and the savepoint below (one synchronous job).
  const existing = store.byExternalId(account.id, body.external_id);
  // A repeat of a known external_id is answered below as before; only a new charge is checked.
  if (!existing) refuseOverCapWhileOffline(ctx, account, terminal.id, amount, currency);
  const result = tx(ctx.db, () => {
    if (existing) {
      if (existing.amount_in_cents === amount && existing.terminal_id === terminal.id) return { id: existing.id, created: false };
      throw new ApiError('external_id_reused');
    }
    const id = newId('tsc');
    const now = isoTime(ctx.clock.now());
    const description = body.description ?? null;
    const checkout = checkoutForCommand(ctx, account, {
      items: items ?? [{ name: description ?? 'Terminal charge', amount_in_cents: amount, quantity: 1 }],
      currency,
      externalId: body.external_id,
      commandId: id,
    });
    for (const older of store.untakenPending(terminal.id)) applyInTx(ctx, older, { type: 'SUPERSEDE', at: now });
    const initial = initialCommand();
    store.insert({
      id,
      account_id: account.id,
      live_mode: account.live_mode ? 1 : 0,
      terminal_id: terminal.id,
      external_id: body.external_id,
      status: initial.status,
      final: initial.final ? 1 : 0,
      offered: initial.context.offered ? 1 : 0,
      amount_in_cents: amount,
      currency,
      installments: body.installments ?? null,
      description,
      show_post_payment_screens: body.show_post_payment_screens === true ? 1 : 0,
      print_receipt: body.print_receipt === false ? 0 : 1,
      tax_id: body.tax_id ?? null,
      items: items ? JSON.stringify(items) : null,
      checkout_id: checkout.id,
      checkout_url: checkout.url,
      snapshot: initial.snapshot,
      created_at: now,
    });
    // The charge rides on this commit: no commit and flush of its own before it leaves (issue 38).
    terminalSignals(ctx).emit('created', terminal.id, id);
    return { id, created: true };
  });
  if (result.created) afterCommit(ctx.db, () => terminalSignals(ctx).emit('command', terminal.id, result.id, []));
  return { command: commandView(ctx, store.byId(result.id)!), created: result.created };
}

function ownCommand(ctx: AppContext, scope: { accountIds: string[]; liveMode: boolean }, id: string): CommandRowWithTerminal {
  const row = commandsStore(ctx.db).byId(id);
  if (!row || !scope.accountIds.includes(row.account_id) || (row.live_mode === 1) !== scope.liveMode) {
    throw notFound('terminal session command', id);
  }
  return row;
}

export function getCommand(ctx: AppContext, scope: { accountIds: string[]; liveMode: boolean }, id: string): CommandView {
  return commandView(ctx, ownCommand(ctx, scope, id));
}

export function listCommands(
  ctx: AppContext,
  scope: { accountIds: string[]; liveMode: boolean },
  filters: CommandFilters,
  limit: number,
  offset: number,
): { rows: CommandView[]; total: number } {
  const { rows, total } = commandsStore(ctx.db).list(scope.accountIds, scope.liveMode, filters, limit, offset);
  return { rows: rows.map((r) => commandView(ctx, r)), total };
}

/**
 * DELETE /terminal_session_commands/{id}, exactly spec 3.3 and 4.9: 200 canceled (now or already),
 * 202 cancel_requested (the terminal may hold it: it is asked to stop and decides), 409 with the
 * command body when its result is final, 404 for an unknown id or another account's.
 */
export function cancelCommand(ctx: AppContext, account: Account, id: string): { status: 200 | 202; command: CommandView } {
  const scope = { accountIds: [account.id], liveMode: account.live_mode };
  const outcome = tx(ctx.db, () => {
    const row = ownCommand(ctx, scope, id);
    if (row.status === 'canceled') return { row, next: null };
    if (row.status === 'cancel_requested') return { row, next: null };
    // A stored card is the terminal's to forward: nothing to cancel (409 with the command, `stored`).
    if (row.final === 1) throw new ApiError('terminal_command_final', { extra: commandView(ctx, row) });
    const next = applyInTx(ctx, row, { type: 'CANCEL', at: isoTime(ctx.clock.now()) });
    return { row, next };
  });
  const after = commandsStore(ctx.db).byId(id)!;
  const next = outcome.next;
  if (next) afterCommit(ctx.db, () => terminalSignals(ctx).emit('command', after.terminal_id, id, next.effects));
  return { status: after.status === 'canceled' ? 200 : 202, command: commandView(ctx, after) };
}

// ---- The machine's effects, and what the bridge and the registry call ----

/** Applies one event inside the caller's transaction; performs the machine's effects there too. */
function applyInTx(ctx: AppContext, row: CommandRow, event: CommandEvent): Transitioned | null {
  const next = applyCommandEvent(row.snapshot, event);
  if (!next) return null;
  commandsStore(ctx.db).update({
    id: row.id,
    status: next.status,
    final: terminalDone(next) ? 1 : 0,
    offered: next.context.offered ? 1 : 0,
    snapshot: next.snapshot,
    cancellation_requested_at: next.context.cancellationRequestedAt,
    canceled_at: next.context.canceledAt,
    updated_at: event.at,
  });
  for (const effect of next.effects) {
    // settleCheckoutPayment writes the checkout, intent, ledger row, events and the
    // `terminal_payment` sync record in this same transaction. A terminal-confirmed cancel moves
    // no money: the checkout returns to unpaid.
    if (effect.type === 'sendCancel' || effect.type === 'requestStatus') continue;
    const account = accountsOf(ctx).account(row.account_id);
    if (!account) throw new Error(`command ${row.id}: account ${row.account_id} is gone`);
    if (effect.type === 'storePayment') {
      // The checkout stays (or turns) payment_in_progress, waiting for a pending payment intent
      // (intent.pending): the money is decided when the terminal forwards it.
      const r = effect.params as SettleParams;
      recordStoredPayment(ctx, {
        accountId: row.account_id,
        liveMode: row.live_mode === 1,
        terminalId: row.terminal_id,
        commandId: row.id,
        checkoutId: row.checkout_id,
        amountInCents: row.amount_in_cents,
        currency: row.currency,
        offlineReference: r.offline_reference ?? row.id,
        card: r.card,
        at: r.at,
      });
    } else if (effect.type === 'settle') {
      const result = effect.params as SettleParams;
      settleTerminalPayment(ctx, account, { checkoutId: row.checkout_id, installments: row.installments, result });
      // Only an approval proves a processor answered (a terminal declines offline charges by itself too).
      if (result.outcome === 'approved') processorAnswered(ctx, result.at);
    } else {
      markCheckoutInProgress(ctx, account, row.checkout_id, effect.type === 'startPayment');
    }
  }
  return next;
}

export interface AppliedEvent {
  row: CommandRowWithTerminal;
  /** null when the machine refused the event: nothing changed (a duplicate result, say). */
  changed: Transitioned | null;
}

/**
 * One event on a command row the caller read in this same turn (nothing ran since), in its own
 * transaction: what the bridge's offer uses, without reading the row again (decision 0308).
 */
export function applyEventToRow(ctx: AppContext, row: CommandRow, event: CommandEvent): Transitioned | null {
  return tx(ctx.db, () => applyInTx(ctx, row, event));
}

/** One terminal-side event on one command, in its own transaction. */
export function applyTerminalEvent(ctx: AppContext, commandId: string, event: CommandEvent): AppliedEvent | undefined {
  const store = commandsStore(ctx.db);
  return tx(ctx.db, () => {
    const row = store.byId(commandId);
    if (!row) return undefined;
    const changed = applyInTx(ctx, row, event);
    return { row: changed ? store.byId(commandId)! : row, changed };
  });
}

/** What the till calls a checkout it sent to a terminal: its reference and description ("" when none sent one). */
export function tillReferenceOf(ctx: AppContext, checkoutId: string): string {
  const c = commandsStore(ctx.db).ofCheckout(checkoutId);
  return c ? [c.external_id, c.description].filter(Boolean).join(' · ') : '';
}

export function commandRow(ctx: AppContext, id: string): CommandRowWithTerminal | undefined {
  return commandsStore(ctx.db).byId(id);
}

/** Whether the command exists and is committed as offered (its OFFER's savepoint did not roll back). */
export function commandOffered(ctx: AppContext, id: string): boolean {
  return commandsStore(ctx.db).isOffered(id);
}

/**
 * The one command a terminal should be working on: the oldest open command it was offered (it may
 * hold it), else the newest pending one (older pending ones were superseded by it).
 */
export function currentCommandOf(ctx: AppContext, terminalId: string): CommandRow | undefined {
  const store = commandsStore(ctx.db);
  return store.offeredOpen(terminalId) ?? store.newestUntaken(terminalId);
}

/** Every command not final yet (of one terminal, or of all): what a restart or a reconnect resumes. */
export function openCommands(ctx: AppContext, terminalId?: string): CommandRow[] {
  const store = commandsStore(ctx.db);
  return terminalId ? store.openOfTerminal(terminalId) : store.open();
}

export function terminalHasTakenCommand(ctx: AppContext, terminalId: string): boolean {
  return commandsStore(ctx.db).hasOfferedOpen(terminalId);
}

/** Inside the caller's transaction: cancels the terminal's commands it was never handed. */
export function cancelUntakenCommandsOfTerminal(ctx: AppContext, terminalId: string): void {
  const at = isoTime(ctx.clock.now());
  for (const row of commandsStore(ctx.db).untakenPending(terminalId)) applyInTx(ctx, row, { type: 'CANCEL', at });
}

/**
 * The terminal command that took a checkout's payment, for a refund carried out by that terminal:
 * its terminal, the terminal's transport, and the reference (and time) the terminal gave the payment.
 */
export function terminalPaymentOfCheckout(
  ctx: AppContext,
  checkoutId: string,
): { terminalId: string; transport: string; retired: boolean; reference: string | null; referenceAt: string | null } | undefined {
  const row = commandsStore(ctx.db).consumedOfCheckout(checkoutId);
  if (!row) return undefined;
  const result = commandContext(row).result;
  return {
    terminalId: row.terminal_id,
    transport: row.transport,
    retired: row.retired_at !== null,
    reference: result?.processor_reference ?? null,
    referenceAt: result?.processor_reference_at ?? null,
  };
}
