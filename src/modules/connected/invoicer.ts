import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { balanceTransactionsAfter, ledgerHighWater } from '../ledger/service.js';
import { taxInvoiceProvider } from '../tax-invoices/service.js';
import { ConnectedService } from './service.js';
import { commissionInvoicePayload } from './views.js';
import type { ProfileRow } from './store.js';

/** Spec 2.8's only timezone: Guatemala, UTC-6 all year. */
const GT_OFFSET_MS = -6 * 3600_000;
const DAY_MS = 86_400_000;
const gtDay = (ms: number) => new Date(ms + GT_OFFSET_MS).toISOString().slice(0, 10);
const dayStart = (day: string) => Date.parse(`${day}T00:00:00.000Z`) - GT_OFFSET_MS;
const nextDay = (day: string) => gtDay(dayStart(day) + DAY_MS);

/**
 * The daily commission invoice of connected accounts (spec 2.8, 6.2). For every child whose mode is
 * `daily`, each finished Guatemala day inside its eligible interval [enabled_at, disabled_at) gets
 * one invoice per currency for the commission (and withheld VAT) of its ledger rows that day; days
 * before `disabled_at` are still drained after a switch to `none`. Invoices are issued through the
 * tax-invoice certifier, retried with a doubling delay, and end `issued` or, after
 * `connected.invoice_max_attempts`, `failed`; each end emits its event to the platform once.
 * Everything is driven by `ctx.clock`: `runDue()` does what is due now.
 */
export class CommissionInvoicer implements Worker {
  readonly name = 'commission-invoices';
  private readonly service: ConnectedService;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly ctx: AppContext) {
    this.service = new ConnectedService(ctx);
  }

  start(): void {
    this.timer = setInterval(
      () => void this.runDue().catch((err) => this.ctx.log.error({ err }, 'commission invoicing failed')),
      this.ctx.config.connected.invoice_check_interval_ms,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Opens the invoices of finished days, then tries every invoice due; one run at a time. */
  runDue(): Promise<void> {
    this.running ??= (async () => {
      try {
        this.openInvoices();
        await this.issueDue();
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private openInvoices(): void {
    const now = this.ctx.clock.now();
    const yesterday = gtDay(now - DAY_MS);
    for (const p of this.service.store.all()) {
      if (!p.commission_enabled_at) continue;
      const enabled = Date.parse(p.commission_enabled_at);
      const disabled = p.commission_disabled_at ? Date.parse(p.commission_disabled_at) : Infinity;
      let day = p.commission_invoiced_through ? nextDay(p.commission_invoiced_through) : gtDay(enabled);
      const lastDay = disabled === Infinity ? yesterday : [yesterday, gtDay(disabled - 1)].sort()[0];
      if (day > lastDay) continue;
      tx(this.ctx.db, () => {
        const highWater = ledgerHighWater(this.ctx);
        for (; day <= lastDay; day = nextDay(day)) {
          const from = Math.max(dayStart(day), enabled);
          const until = Math.min(dayStart(day) + DAY_MS, disabled) - 1;
          if (until < from) continue;
          this.openDay(p, day, from, until, highWater);
        }
        const fresh = this.service.store.get(p.account_id)!;
        this.service.store.save({ ...fresh, commission_invoiced_through: lastDay, updated_at: isoTime(now) });
      });
    }
  }

  private openDay(p: ProfileRow, day: string, from: number, until: number, highWater: number): void {
    const sums = new Map<string, { commission: number; vat: number }>();
    const filter = { accountIds: [p.account_id], liveMode: p.live_mode === 1, from: isoTime(from), until: isoTime(until) };
    for (let cursor = 0; ; ) {
      const page = balanceTransactionsAfter(this.ctx, filter, cursor, highWater, 500);
      if (page.rows.length === 0) break;
      cursor = page.cursor;
      for (const t of page.rows) {
        const s = sums.get(t.currency) ?? { commission: 0, vat: 0 };
        s.commission += t.fee_details.commission_in_cents;
        s.vat += t.fee_details.vat_withheld_in_cents;
        sums.set(t.currency, s);
      }
    }
    const at = isoTime(this.ctx.clock.now());
    for (const [currency, s] of sums) {
      if (s.commission + s.vat <= 0) continue;
      this.service.store.insertInvoice({
        id: newId('pci'),
        account_id: p.account_id,
        live_mode: p.live_mode,
        platform_account_id: p.parent_account_id,
        day,
        currency,
        commission_in_cents: s.commission,
        vat_in_cents: s.vat,
        total_in_cents: s.commission + s.vat,
        next_attempt_at: at,
        created_at: at,
        updated_at: at,
      });
    }
  }

  private async issueDue(): Promise<void> {
    const cfg = this.ctx.config.connected;
    for (const inv of this.service.store.dueInvoices(isoTime(this.ctx.clock.now()))) {
      const platform = this.service.accounts.account(inv.platform_account_id);
      const child = this.service.accounts.account(inv.account_id);
      if (!platform || !child) continue;
      let issued: { document_id: string; url: string } | undefined;
      let error: string | null = null;
      try {
        issued = await taxInvoiceProvider(this.ctx).issue({
          invoice_id: inv.id,
          intent_id: inv.id,
          seller: { account_id: platform.id, tax_id: platform.tax_id, tax_name: platform.tax_name },
          buyer_tax_id: child.tax_id ?? 'CF',
          currency: inv.currency,
          total_in_cents: inv.total_in_cents,
          lines: [{ description: `Comisiones del ${inv.day}`, amount_in_cents: inv.total_in_cents, quantity: 1, tax_category: 'service' }],
          issued_at: isoTime(this.ctx.clock.now()),
        });
      } catch (err) {
        error = (err as Error).message.slice(0, 500);
      }
      const attempts = inv.attempts + 1;
      const now = this.ctx.clock.now();
      const status = issued ? 'issued' : attempts >= cfg.invoice_max_attempts ? 'failed' : 'pending';
      tx(this.ctx.db, () => {
        const settled = this.service.store.settleInvoice({
          id: inv.id,
          status,
          attempts,
          next_attempt_at: status === 'pending' ? isoTime(now + cfg.invoice_retry_base_ms * 2 ** (attempts - 1)) : null,
          document_id: issued?.document_id ?? null,
          url: issued?.url ?? null,
          last_error: error,
          updated_at: isoTime(now),
        });
        if (!settled || status === 'pending') return;
        this.ctx.outbox.emit({
          accountId: platform.id,
          liveMode: platform.live_mode,
          type: `partner_commission_invoice.${status}`,
          objectId: inv.id,
          payload: commissionInvoicePayload(child.id, this.service.store.invoice(inv.id)!, isoTime(now)),
        });
      });
    }
  }
}

const invoicers = new WeakMap<AppContext, CommissionInvoicer>();
export function commissionInvoicer(ctx: AppContext): CommissionInvoicer {
  let w = invoicers.get(ctx);
  if (!w) invoicers.set(ctx, (w = new CommissionInvoicer(ctx)));
  return w;
}
