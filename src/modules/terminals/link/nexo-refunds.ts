import type { AppContext } from '../../../context.js';
import type { Clock as Scheduler, TimerHandle } from '../../../../devices/index.js';
import { applyTerminalRefund, openTerminalRefunds, type OpenTerminalRefund, type TerminalRefundNews } from '../../refunds/service.js';
import { terminalHasTakenCommand } from '../commands/service.js';
import { terminalSignals } from '../signals.js';

type NexoDriver = typeof import('../../../../devices/nexo/index.js');
type RefundAnswer = Awaited<ReturnType<NexoDriver['refundStatus']>>;

/** How often a terminal's open refunds are looked at while its link is up. */
const REFUND_TICK_MS = 1_000;
const STATUS_TIMEOUT_MS = 10_000;

interface Runner {
  timer?: TimerHandle;
  stopped: boolean;
  running: boolean;
  /** A refund was queued while a round ran: another round follows at once. */
  again: boolean;
  kick(): void;
}

/**
 * Carries out the refunds of payments nexo terminals took (docs/terminals-nexo.md "Refunds";
 * src/modules/refunds/terminal.ts holds their state), over each terminal's link while it is up,
 * one request at a time per terminal:
 *
 * - a queued refund is marked `sent` (committed) and only then sent: after a crash or a lost answer
 *   posd knows the terminal may hold it;
 * - a `sent` refund whose answer posd does not have is asked for by TransactionStatusRequest: the
 *   kept answer settles it, InProgress waits, NotFound (never held) lets the same request go again.
 *   Never a second request before the terminal has said what became of the first: no double refund.
 *
 * A new request waits while the terminal holds a charge (a terminal runs one transaction at a time);
 * a charge waits while a request is `sent` (offer.ts), and a request leaving `sent` wakes the bridge
 * (`onSettled`) to offer it.
 */
export class NexoRefunds {
  private readonly runners = new Map<string, Runner>();
  private readonly onRefund = (terminalId: string) => this.runners.get(terminalId)?.kick();

  constructor(
    private readonly ctx: AppContext,
    private readonly scheduler: Scheduler,
    /** A request left `sent`: the terminal's held charge may be offered now. */
    private readonly onSettled: (terminalId: string) => void,
  ) {
    // A refund queued through the API goes out now, not at the next round.
    terminalSignals(ctx).on('refund', this.onRefund);
  }

  /** Runs `terminalId`'s refunds over this link until it goes down or `stop`. */
  attach(terminalId: string, driver: NexoDriver, link: InstanceType<NexoDriver['NexoLink']>): void {
    this.stop(terminalId);
    const tick = async () => {
      if (runner.stopped || link.isDown) return;
      runner.running = true;
      do {
        runner.again = false;
        try {
          await this.runOnce(terminalId, driver, link);
        } catch (err) {
          this.ctx.log.error({ err, terminal_id: terminalId }, 'nexo refunds: a round failed');
        }
      } while (runner.again && !runner.stopped && !link.isDown);
      runner.running = false;
      if (!runner.stopped && !link.isDown) runner.timer = this.scheduler.setTimeout(() => void tick(), REFUND_TICK_MS);
    };
    const runner: Runner = {
      stopped: false,
      running: false,
      again: false,
      kick: () => {
        if (runner.stopped) return;
        if (runner.running) runner.again = true;
        else {
          this.scheduler.clearTimeout(runner.timer);
          runner.timer = this.scheduler.setTimeout(() => void tick(), 0);
        }
      },
    };
    this.runners.set(terminalId, runner);
    runner.kick();
    void link.whenDown.then(() => this.stop(terminalId, runner));
  }

  stop(terminalId: string, only?: Runner): void {
    const r = this.runners.get(terminalId);
    if (!r || (only && r !== only)) return;
    r.stopped = true;
    this.scheduler.clearTimeout(r.timer);
    this.runners.delete(terminalId);
  }

  stopAll(): void {
    terminalSignals(this.ctx).off('refund', this.onRefund);
    for (const id of [...this.runners.keys()]) this.stop(id);
  }

  private async runOnce(terminalId: string, driver: NexoDriver, link: InstanceType<NexoDriver['NexoLink']>): Promise<void> {
    for (const r of openTerminalRefunds(this.ctx, terminalId)) {
      const client = link.refundClient;
      if (!client) return;
      const req = { refundId: r.refundId, attempt: r.attempt, kind: r.kind, original: r.original, amountInCents: r.amountInCents, currency: r.currency };
      if (r.sent) {
        let a: RefundAnswer;
        try {
          a = await driver.refundStatus(client, req, STATUS_TIMEOUT_MS);
        } catch (err) {
          this.ctx.log.warn({ terminal_id: terminalId, refund_id: r.refundId, reason: (err as Error).message }, 'nexo refund status not learned');
          return;
        }
        // The terminal still works on it, or said nothing usable: nothing else goes before it.
        if (!this.apply(terminalId, r, a)) return;
        continue;
      }
      if (terminalHasTakenCommand(this.ctx, terminalId)) return;
      if (!applyTerminalRefund(this.ctx, r.refundId, { type: 'SEND', attempt: r.attempt })) continue;
      this.ctx.log.info({ terminal_id: terminalId, refund_id: r.refundId, kind: r.kind, attempt: r.attempt }, 'nexo refund sent');
      let a: RefundAnswer;
      try {
        a = await driver.sendRefund(client, req, this.ctx.config.terminals.nexo_payment_timeout_ms, new Date(this.ctx.clock.now()));
      } catch (err) {
        // The answer is lost, not the request: the next round asks the terminal for it.
        this.ctx.log.warn({ terminal_id: terminalId, refund_id: r.refundId, reason: (err as Error).message }, 'nexo refund answer lost');
        return;
      }
      if (!this.apply(terminalId, r, a)) return;
    }
  }

  /** Applies a terminal's answer; false when the terminal still holds the request undecided. */
  private apply(terminalId: string, r: OpenTerminalRefund, a: RefundAnswer): boolean {
    const log = { terminal_id: terminalId, refund_id: r.refundId, attempt: r.attempt };
    switch (a.kind) {
      case 'succeeded':
        this.settle(terminalId, r, { type: 'SUCCEED', attempt: r.attempt, reference: a.reference });
        this.ctx.log.info(log, 'nexo refund succeeded');
        return true;
      case 'failed':
        this.settle(terminalId, r, { type: 'FAIL', attempt: r.attempt, reason: a.reason });
        this.ctx.log.warn({ ...log, reason: a.reason }, 'nexo refund failed');
        return true;
      case 'busy':
        this.settle(terminalId, r, { type: 'BUSY', attempt: r.attempt });
        return false;
      case 'not_found':
        this.settle(terminalId, r, { type: 'NOT_HELD', attempt: r.attempt });
        this.ctx.log.warn(log, 'nexo refund request not held by the terminal; it goes again');
        return false;
      case 'in_progress':
        return false;
      case 'unknown':
        this.ctx.log.warn({ ...log, reason: a.detail }, 'nexo refund answer not understood; asking its status');
        return false;
    }
  }

  /** Commits the terminal's word, then wakes the bridge: the terminal is free for a held charge. */
  private settle(terminalId: string, r: OpenTerminalRefund, news: TerminalRefundNews): void {
    if (!applyTerminalRefund(this.ctx, r.refundId, news)) return;
    try {
      this.onSettled(terminalId);
    } catch (err) {
      // The refund stands; the held charge goes at the terminal's next hello or the command's next change.
      this.ctx.log.error({ err, terminal_id: terminalId }, 'nexo refunds: offering the held charge failed');
    }
  }
}
