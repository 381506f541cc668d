import { readFileSync } from 'node:fs';
import type { AppContext } from '../../../context.js';
import type { Clock as Scheduler, TimerHandle } from '../../../../devices/index.js';
import { terminalAddressGuard } from '../../../system/url-guard.js';
import { hasNexoTerminals, nexoKeyOf, nexoTerminals, recordAvailability, terminalRow } from '../service.js';
import { commandContext, openCommands } from '../commands/service.js';
import { waitingStoredOfTerminal } from '../stored/service.js';
import type { TerminalRow } from '../store.js';
import type { TerminalBridge } from './bridge.js';
import { NexoRefunds } from './nexo-refunds.js';

type NexoDriver = typeof import('../../../../devices/nexo/index.js');

/** How often the registry is read for nexo terminals added or retired by `posd terminals` beside the daemon. */
const RESCAN_MS = 5_000;
const FIRST_RETRY_MS = 500;

interface Kept {
  row: TerminalRow;
  timer?: TimerHandle;
  retryMs: number;
  link?: { close(detail?: string): Promise<void> };
  stopped: boolean;
}

/**
 * Keeps a link open to every registered nexo terminal (docs/terminals-nexo.md). posd opens these
 * links itself: each opening reaches the terminal, recovers every command it may hold by
 * TransactionStatusRequest (devices/nexo/nexo-link.ts) and hands the bridge a link whose hello
 * reports what the terminal kept. The driver (and the library's NexoCrypto) is imported only once a
 * nexo terminal is registered, so a store without one starts as it did.
 */
export class NexoTerminals {
  private readonly kept = new Map<string, Kept>();
  private driver: Promise<NexoDriver> | undefined;
  private rescan: TimerHandle | undefined;
  private running = false;
  private readonly refunds: NexoRefunds;

  constructor(
    private readonly ctx: AppContext,
    private readonly bridge: TerminalBridge,
    private readonly scheduler: Scheduler,
  ) {
    // A refund's settling frees the terminal: a charge held back meanwhile (offer.ts) is offered now.
    this.refunds = new NexoRefunds(ctx, scheduler, (terminalId) => {
      const session = bridge.sessions.get(terminalId);
      if (session) bridge.pump(session);
    });
  }

  start(): void {
    this.running = true;
    this.scan();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.scheduler.clearTimeout(this.rescan);
    this.refunds.stopAll();
    await Promise.all([...this.kept.keys()].map((id) => this.release(id)));
  }

  private scan(): void {
    if (!this.running) return;
    try {
      const rows = hasNexoTerminals(this.ctx) ? nexoTerminals(this.ctx) : [];
      const ids = new Set(rows.map((r) => r.id));
      for (const id of this.kept.keys()) if (!ids.has(id)) void this.release(id);
      for (const row of rows) if (!this.kept.has(row.id)) this.keep(row);
    } catch (err) {
      this.ctx.log.error({ err }, 'reading the nexo terminals failed');
    }
    this.rescan = this.scheduler.setTimeout(() => this.scan(), RESCAN_MS);
  }

  private keep(row: TerminalRow): void {
    const k: Kept = { row, retryMs: FIRST_RETRY_MS, stopped: false };
    this.kept.set(row.id, k);
    void this.open(k);
  }

  private async release(id: string): Promise<void> {
    const k = this.kept.get(id);
    if (!k) return;
    this.kept.delete(id);
    this.refunds.stop(id);
    k.stopped = true;
    this.scheduler.clearTimeout(k.timer);
    await k.link?.close('nexo terminal released');
  }

  private retry(k: Kept): void {
    if (k.stopped || !this.running) return;
    k.timer = this.scheduler.setTimeout(() => void this.open(k), k.retryMs);
    k.retryMs = Math.min(k.retryMs * 2, this.ctx.config.terminals.serial_reopen_max_ms);
  }

  private async open(k: Kept): Promise<void> {
    if (k.stopped || !this.running) return;
    // Retired meanwhile (API or CLI): released now rather than at the next scan.
    if (terminalRow(this.ctx, k.row.id)?.retired_at) return void this.release(k.row.id);
    const { row } = k;
    const cfg = this.ctx.config.terminals;
    let client: InstanceType<NexoDriver['NexoClient']> | undefined;
    try {
      this.driver ??= import('../../../../devices/nexo/index.js');
      const driver = await this.driver;
      const address = row.nexo_address!;
      const guard = terminalAddressGuard(nexoTerminals(this.ctx).map((r) => r.nexo_address!));
      const refused = await guard.check(`https://${address.includes(':') ? `[${address}]` : address}:${row.nexo_port}/nexo`);
      if (refused.length > 0) throw new Error(`outbound guard: ${refused.join('; ')}`);
      client = new driver.NexoClient({
        address,
        port: row.nexo_port!,
        poiid: row.nexo_poiid!,
        saleId: cfg.nexo_sale_id,
        key: nexoKeyOf(this.ctx, row),
        ca: cfg.nexo_ca_file ? readFileSync(cfg.nexo_ca_file, 'utf8') : undefined,
        lookup: guard.lookup(),
      });
      // Commands this terminal may hold: their fate is asked before the link (and any retry) exists.
      const offered = openCommands(this.ctx, row.id)
        .filter((c) => commandContext(c).offered)
        .map((c) => c.id);
      const link = await driver.openNexoLink(
        {
          client,
          terminalId: row.id,
          clock: this.scheduler,
          paymentTimeoutMs: cfg.nexo_payment_timeout_ms,
          healthIntervalMs: cfg.ping_interval_ms,
          maxMissedHealth: cfg.max_missed_pings,
          // Payments it approved offline: their outcome is asked for until the terminal knows it.
          storedPayments: () => waitingStoredOfTerminal(this.ctx, row.id),
          storedPollMs: cfg.nexo_stored_poll_ms,
        },
        offered,
      );
      if (k.stopped || !this.running) {
        await link.close('nexo terminal released');
        return;
      }
      k.link = link;
      k.retryMs = FIRST_RETRY_MS;
      this.ctx.log.info({ terminal_id: row.id, poiid: row.nexo_poiid, recovered: offered.length }, 'nexo terminal reached');
      this.bridge.acceptLink(link, row.id);
      // Refunds of payments this terminal took go over the same link (nexo-refunds.ts).
      this.refunds.attach(row.id, driver, link);
      void link.whenDown.then((d) => {
        k.link = undefined;
        this.ctx.log.warn({ terminal_id: row.id, reason: d.detail }, 'nexo terminal link down');
        this.retry(k);
      });
    } catch (err) {
      await client?.close().catch(() => {});
      const e = err as Error & { wrongKey?: boolean };
      if (e.wrongKey)
        this.ctx.log.error({ terminal_id: row.id, poiid: row.nexo_poiid, reason: e.message }, 'nexo terminal refused: its key differs from the one registered');
      else this.ctx.log.warn({ terminal_id: row.id, poiid: row.nexo_poiid, reason: e.message, retry_in_ms: k.retryMs }, 'nexo terminal not reached');
      try {
        recordAvailability(this.ctx, row.id, 'unavailable');
      } catch {
        // the next attempt records it
      }
      this.retry(k);
    }
  }
}
