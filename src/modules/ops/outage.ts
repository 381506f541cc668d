import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { accountsOf } from '../../accounts/service.js';
import { syncStatus } from '../../sync/status.js';
import { STATE } from '../../sync/shared/state.js';
import { boxZone, dateIn } from '../../sync/shared/summary.js';
import { storeSide, type OutageLink, type OutageWindowRow } from '../../sync/store/sync-store.js';
import { salesByMethod } from '../intents/service.js';
import { listCheckouts, getCheckoutIn } from '../checkouts/service.js';
import { customerById } from '../customers/service.js';
import { commandRow, tillReferenceOf } from '../terminals/commands/service.js';
import {
  activeOverrideOf,
  capsOf,
  centralDeclinedLater,
  declinedLaterPayments,
  nextForwardDeadline,
  offlinePolicyFor,
  openStoredPayments,
  storedPaymentsBetween,
  type CentralStoredPaymentRow,
  type StoredPaymentRow,
} from '../terminals/stored/service.js';

/**
 * The outage view (docs/stored-payments.md, "What a manager sees"): while a link is down, what
 * waits and how long is left; after, one report per outage. Read from the database alone, so
 * `posd outage report` works with the daemon stopped.
 */

export interface MoneyCount {
  currency: string;
  count: number;
  amount_in_cents: number;
}

export interface OutageNow {
  offline: boolean;
  /** The links down now, each since when. */
  links: Array<{ link: OutageLink; since: string }>;
  since: string | null;
  down_for_ms: number;
  /** Stored payments not final yet, by state. */
  stored: Array<MoneyCount & { status: string }>;
  records_waiting: number;
  /** The deadline of the oldest payment still only stored (posd expires it then), and how far off. */
  next_deadline: string | null;
  deadline_in_ms: number | null;
}

export interface SaleToCollect {
  stored_payment_id: string;
  /** At a central, the store that reported it; null at the store itself. */
  store_id: string | null;
  status: string;
  reason: string | null;
  settled_at: string | null;
  account_id: string;
  live_mode: boolean;
  terminal_id: string;
  command_id: string;
  /** What the till gave with the charge. */
  external_id: string | null;
  description: string | null;
  tax_id: string | null;
  amount_in_cents: number;
  currency: string;
  card: { network: string | null; last4: string | null };
  checkout_id: string;
  checkout_status: string | null;
  /** The payment intent that failed (its intent.failed was emitted), null when none waited. */
  payment_intent_id: string | null;
  customer: { id: string; full_name: string | null; email: string | null; phone: string | null; tax_id: string | null } | null;
}

/** What a box took offline in an outage: the cards its terminals stored, per terminal, account and currency. */
export interface TakenOfflineRow {
  terminal_id: string;
  account_id: string;
  live_mode: boolean;
  currency: string;
  count: number;
  amount_in_cents: number;
}

export interface OutageReport {
  /** At a central, the store that reported the outage; null at the store itself. */
  store_id: string | null;
  started_at: string;
  /** null: still going on. */
  ended_at: string | null;
  links: Array<{ link: OutageLink; started_at: string; ended_at: string | null }>;
  /** Live sales made during the window that succeeded, by method (a card stored offline counts when it was stored: its intent was made then, pending). */
  sales: Array<MoneyCount & { method: string }>;
  /** The cards stored during the window, per terminal (at a central: as the store reported its processor windows). */
  taken_offline: TakenOfflineRow[];
  /** The payments stored during the window, by their state now (at a central: those the store reported final). */
  stored_payments: Array<MoneyCount & { status: string }>;
  /** Stored during the window, then declined or expired: the sale is owed (checkout_status says whether still). */
  to_collect: SaleToCollect[];
  /** Checkouts made during the window that are still not paid, but for the sales to collect (listed above). */
  open_checkouts: {
    total: number;
    /** `reference`: the till's own (its external_id and description), empty when no till sent the checkout. */
    items: Array<{
      id: string;
      reference: string;
      account_id: string;
      live_mode: boolean;
      status: string;
      amount_in_cents: number;
      currency: string;
      created_at: string;
    }>;
  };
  reconciliation: {
    /**
     * ongoing: the outage is not over; pushing: facts of the window still wait for the central;
     * unchecked: all pushed, the window's days not reconciled since; equal / different: the last
     * reconciliation of its days. not_synced: this box has no central.
     */
    state: 'ongoing' | 'pushing' | 'unchecked' | 'equal' | 'different' | 'not_synced';
    records_waiting: number;
    checked_at: string | null;
    differences: number;
  };
}

const OPEN_CHECKOUT_STATUSES = ['unpaid', 'payment_in_progress', 'needs_verification', 'needs_payer_authentication'];
const LIST_MAX = 200;

/** Whose outage report: the accounts an API key reads, in its environment; absent, the whole box (the page, the shell). */
export interface ReportScope {
  accountIds: string[];
  liveMode: boolean;
}

function scopes(ctx: AppContext, only?: ReportScope): Array<{ accountIds: string[]; liveMode: boolean }> {
  if (only) return [only];
  const all = accountsOf(ctx).accounts();
  return [true, false]
    .map((liveMode) => ({ liveMode, accountIds: all.filter((a) => a.live_mode === liveMode).map((a) => a.id) }))
    .filter((s) => s.accountIds.length > 0);
}

export function outageNow(ctx: AppContext): OutageNow {
  const now = ctx.clock.now();
  const open = storeSide(ctx.db).openOutages();
  const since = open.length ? open.map((w) => w.started_at).sort()[0] : null;
  const deadline = nextForwardDeadline(ctx);
  return {
    offline: open.length > 0,
    links: open.map((w) => ({ link: w.link, since: w.started_at })),
    since,
    down_for_ms: since ? Math.max(0, now - Date.parse(since)) : 0,
    stored: openStoredPayments(ctx),
    records_waiting: syncStatus(ctx.config, ctx.db, now).records_waiting,
    next_deadline: deadline,
    deadline_in_ms: deadline ? Date.parse(deadline) - now : null,
  };
}

/** Reports look back this far unless told otherwise (`--since`): a flapping link leaves many windows. */
const LOOK_BACK_MS = 30 * 86_400_000;
/** A blip of the central link shorter than this, with no card stored, is no outage worth a report. */
export const MIN_OUTAGE_MS = 60_000;

/** Link windows (oldest first) merged where they overlap, oldest first. */
export function mergeWindows<W extends { started_at: string; ended_at: string | null }>(
  rows: readonly W[],
): Array<{ started_at: string; ended_at: string | null; links: W[] }> {
  const merged: Array<{ started_at: string; ended_at: string | null; links: W[] }> = [];
  for (const w of rows) {
    const last = merged[merged.length - 1];
    if (last && (last.ended_at === null || w.started_at <= last.ended_at)) {
      last.links.push(w);
      if (last.ended_at !== null && (w.ended_at === null || w.ended_at > last.ended_at)) last.ended_at = w.ended_at;
    } else {
      merged.push({ started_at: w.started_at, ended_at: w.ended_at, links: [w] });
    }
  }
  return merged;
}

/**
 * Outages: the link windows merged where they overlap (the central and the processor usually go
 * down together, over the same uplink), newest first. One going on is always listed; one that is
 * over is listed when it lasted a minute or more, or cards were stored during it.
 */
export function outageWindows(
  ctx: AppContext,
  opts: { from?: string; limit?: number } = {},
): Array<{ started_at: string; ended_at: string | null; links: OutageWindowRow[] }> {
  const rows = storeSide(ctx.db).outagesBetween(opts.from ?? isoTime(ctx.clock.now() - LOOK_BACK_MS), '9999');
  const merged = mergeWindows(rows);
  const worth = (o: (typeof merged)[number]) =>
    o.ended_at === null || Date.parse(o.ended_at) - Date.parse(o.started_at) >= MIN_OUTAGE_MS || o.links.some((w) => w.link === 'processor');
  return merged
    .filter(worth)
    .reverse()
    .slice(0, opts.limit ?? 20);
}

/** Stored payments grouped per terminal, account and currency: what was taken offline. */
export function takenOfflineOf(
  rows: ReadonlyArray<Pick<StoredPaymentRow, 'terminal_id' | 'account_id' | 'live_mode' | 'currency' | 'amount_in_cents'>>,
): TakenOfflineRow[] {
  const m = new Map<string, TakenOfflineRow>();
  for (const r of rows) {
    const k = `${r.terminal_id}|${r.account_id}|${r.live_mode}|${r.currency}`;
    const e = m.get(k) ?? {
      terminal_id: r.terminal_id,
      account_id: r.account_id,
      live_mode: r.live_mode === 1,
      currency: r.currency,
      count: 0,
      amount_in_cents: 0,
    };
    e.count++;
    e.amount_in_cents += r.amount_in_cents;
    m.set(k, e);
  }
  return [...m.values()].sort((a, b) => a.terminal_id.localeCompare(b.terminal_id) || a.currency.localeCompare(b.currency));
}

export function byState(rows: ReadonlyArray<Pick<StoredPaymentRow, 'status' | 'currency' | 'amount_in_cents'>>): Array<MoneyCount & { status: string }> {
  const m = new Map<string, MoneyCount & { status: string }>();
  for (const r of rows) {
    const k = `${r.status} ${r.currency}`;
    const e = m.get(k) ?? { status: r.status, currency: r.currency, count: 0, amount_in_cents: 0 };
    e.count++;
    e.amount_in_cents += r.amount_in_cents;
    m.set(k, e);
  }
  return [...m.values()].sort((a, b) => a.status.localeCompare(b.status) || a.currency.localeCompare(b.currency));
}

export function toCollect(
  ctx: AppContext,
  r: StoredPaymentRow | CentralStoredPaymentRow,
  // What the till gave: the command's at the store, what the store reported at a central.
  cmd: { external_id: string | null; description: string | null; tax_id: string | null } | undefined = commandRow(ctx, r.command_id),
): SaleToCollect {
  const checkout = getCheckoutIn(ctx, [r.account_id], r.live_mode === 1, r.checkout_id);
  const customer = checkout?.customer_id ? customerById(ctx, checkout.customer_id) : undefined;
  return {
    stored_payment_id: r.id,
    store_id: 'origin_store_id' in r ? r.origin_store_id : null,
    status: r.status,
    reason: r.reason,
    settled_at: r.settled_at,
    account_id: r.account_id,
    live_mode: r.live_mode === 1,
    terminal_id: r.terminal_id,
    command_id: r.command_id,
    external_id: cmd?.external_id ?? null,
    description: cmd?.description ?? null,
    tax_id: cmd?.tax_id ?? null,
    amount_in_cents: r.amount_in_cents,
    currency: r.currency,
    card: { network: r.card_network, last4: r.card_last4 },
    checkout_id: r.checkout_id,
    checkout_status: checkout?.status ?? null,
    payment_intent_id: r.payment_intent_id,
    customer: customer ? { id: customer.id, full_name: customer.full_name, email: customer.email, phone: customer.phone, tax_id: customer.tax_id } : null,
  };
}

function reconciliationOf(ctx: AppContext, startedAt: string, endedAt: string | null, nowMs: number): OutageReport['reconciliation'] {
  const status = syncStatus(ctx.config, ctx.db, nowMs);
  const store = storeSide(ctx.db);
  if (!status.configured) return { state: 'not_synced', records_waiting: 0, checked_at: null, differences: 0 };
  const acked = Number(store.state(STATE.ackedSeq) ?? 0);
  const lastOfWindow = store.lastSeqBefore(endedAt ?? isoTime(nowMs));
  const waiting = Math.max(0, lastOfWindow - acked);
  // Reconciliation compares the store's days, local midnight to midnight (sync/store/reconcile.ts): the days the window touched.
  const zone = boxZone();
  const first = dateIn(Date.parse(startedAt), zone);
  const last = dateIn(endedAt ? Date.parse(endedAt) : nowMs, zone);
  const diffs = status.reconciliation.differences.filter((d) => d.day >= first && d.day <= last);
  const checked = status.reconciliation.checked_at;
  const state =
    endedAt === null ? 'ongoing' : waiting > 0 ? 'pushing' : diffs.length ? 'different' : checked === null || checked < endedAt ? 'unchecked' : 'equal';
  return { state, records_waiting: waiting, checked_at: checked, differences: diffs.length };
}

export function outageReport(
  ctx: AppContext,
  window: { started_at: string; ended_at: string | null; links: OutageWindowRow[] },
  only?: ReportScope,
): OutageReport {
  const nowMs = ctx.clock.now();
  const from = window.started_at;
  const until = window.ended_at ?? isoTime(nowMs + 1);
  const stored = storedPaymentsBetween(ctx, from, until).filter(
    (r) => !only || (only.accountIds.includes(r.account_id) && (r.live_mode === 1) === only.liveMode),
  );
  const toCollectRows = stored.filter((r) => r.status === 'declined' || r.status === 'expired').map((r) => toCollect(ctx, r));
  // A sale to collect is listed once, there: its checkout is not "left open" too.
  const collected = new Set(toCollectRows.map((c) => c.checkout_id));
  const open: OutageReport['open_checkouts']['items'] = [];
  let total = 0;
  for (const scope of scopes(ctx, only)) {
    for (const status of OPEN_CHECKOUT_STATUSES) {
      const page = listCheckouts(ctx, scope.accountIds, scope.liveMode, LIST_MAX, 0, { status, from, until });
      total += page.total;
      for (const c of page.rows) {
        if (collected.has(c.id)) {
          total--;
          continue;
        }
        if (open.length < LIST_MAX)
          open.push({
            id: c.id,
            reference: tillReferenceOf(ctx, c.id),
            account_id: c.account_id,
            live_mode: scope.liveMode,
            status: c.status,
            amount_in_cents: c.amount_in_cents,
            currency: c.currency,
            created_at: c.created_at,
          });
      }
    }
  }
  open.sort((a, b) => a.created_at.localeCompare(b.created_at));
  return {
    store_id: null,
    started_at: window.started_at,
    ended_at: window.ended_at,
    links: window.links.map((w) => ({ link: w.link, started_at: w.started_at, ended_at: w.ended_at })),
    sales: salesByMethod(ctx, from, until, only?.liveMode ?? true, only?.accountIds ?? null),
    taken_offline: takenOfflineOf(stored),
    stored_payments: byState(stored),
    to_collect: toCollectRows,
    open_checkouts: { total, items: open },
    reconciliation: reconciliationOf(ctx, window.started_at, window.ended_at, nowMs),
  };
}

/**
 * Every sale of an account whose stored card was declined or expired later, whatever the outage
 * (`posd payments offline to-collect`); `owedOnly`: those whose checkout is still not paid.
 */
export function salesToCollect(ctx: AppContext, account: { id: string; live_mode: boolean }, opts: { owedOnly?: boolean } = {}): SaleToCollect[] {
  const all = declinedLaterPayments(ctx, account).map((r) => toCollect(ctx, r));
  return opts.owedOnly ? all.filter((c) => c.checkout_status !== 'paid') : all;
}

/**
 * At a central: the same list across its stores, from what they reported (`stored_payment` records
 * carry what the till gave) and the checkouts and customers their payments brought.
 */
export function centralSalesToCollect(ctx: AppContext, scope: { accountIds: string[]; liveMode: boolean }, opts: { owedOnly?: boolean } = {}): SaleToCollect[] {
  const all = centralDeclinedLater(ctx, scope).map((r) => toCollect(ctx, r, r));
  return opts.owedOnly ? all.filter((c) => c.checkout_status !== 'paid') : all;
}

/** The reports of the latest outages, newest first. */
export function outageReports(ctx: AppContext, opts: { from?: string; limit?: number; only?: ReportScope } = {}): OutageReport[] {
  return outageWindows(ctx, opts).map((w) => outageReport(ctx, w, opts.only));
}

export interface AccountOfflineView {
  id: string;
  name: string;
  live_mode: boolean;
  currency: string;
  caps: ReturnType<typeof capsOf>;
  override: { until: string; actor: string; reason: string } | null;
  /** Whether a terminal may store a payment now (caps, what is stored, deadlines). */
  allowed_now: boolean;
}

/** Every account's offline caps and override, for the override form. */
export function offlineAccounts(ctx: AppContext): AccountOfflineView[] {
  return accountsOf(ctx)
    .accounts()
    .map((a) => {
      const o = activeOverrideOf(ctx, a);
      return {
        id: a.id,
        name: a.name,
        live_mode: a.live_mode,
        currency: a.default_currency,
        caps: capsOf(ctx, a),
        override: o ? { until: o.until_at, actor: o.actor, reason: o.reason } : null,
        allowed_now: offlinePolicyFor(ctx, a.id).allowed,
      };
    })
    .sort((x, y) => Number(y.live_mode) - Number(x.live_mode) || x.name.localeCompare(y.name));
}
