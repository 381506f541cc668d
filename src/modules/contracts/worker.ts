import type { AppContext } from '../../context.js';
import type { Worker } from '../../api/module.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { nextState } from '../../lifecycle.js';
import { contractMachine } from './machine.js';
import { ContractsService, contractRecord } from './service.js';
import type { ContractRow } from './store.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { deliverLink } from './routes.js';

/**
 * Contract chores on the injected clock: the reminder 48 hours after sending when still unsigned
 * (once: `reminder_sent_at` is set before the send, so a crash never sends it twice), expiry of
 * unsigned contracts, and PDFs a signature left unrendered.
 */
export class ContractsWorker implements Worker {
  readonly name = 'contracts';
  private readonly svc: ContractsService;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly ctx: AppContext) {
    this.svc = new ContractsService(ctx);
  }

  start(): void {
    this.timer = setInterval(
      () => void this.runDue().catch((err) => this.ctx.log.error({ err }, 'contract chores failed')),
      this.ctx.config.contracts.check_interval_ms,
    );
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  runDue(): Promise<void> {
    this.running ??= this.once().finally(() => (this.running = undefined));
    return this.running;
  }

  private async once(): Promise<void> {
    const now = this.ctx.clock.now();
    const at = isoTime(now);
    const remindAfter = this.ctx.config.contracts.reminder_after_hours * 3600_000;
    const reminders: string[] = [];
    tx(this.ctx.db, () => {
      for (const row of this.svc.store.open()) {
        if (row.expires_at <= at) {
          const expired: ContractRow = { ...row, status: nextState(contractMachine, row.status, { type: 'EXPIRE' })!, code_hash: null, updated_at: at };
          this.svc.store.save(expired);
          // The central leaves expiry to the store that made the contract: it learns it as a record.
          appendSyncRecord(this.ctx.db, {
            kind: 'contract',
            accountId: row.account_id,
            liveMode: row.live_mode === 1,
            createdAt: at,
            payload: contractRecord(this.ctx, expired, this.svc.store.template(row.template_id)!),
          });
        } else if (!row.reminder_sent_at && Date.parse(row.created_at) + remindAfter <= now) {
          this.svc.store.save({ ...row, reminder_sent_at: at, updated_at: at });
          reminders.push(row.id);
        }
      }
    });
    for (const id of reminders) await deliverLink(this.ctx, id, true).catch((err) => this.ctx.log.warn({ err, contract: id }, 'contract reminder failed'));
    for (const row of this.svc.store.unrendered())
      await this.svc.renderPdf(row).catch((err) => this.ctx.log.error({ err, contract: row.id }, 'rendering a signed PDF failed'));
  }
}

const workers = new WeakMap<AppContext, ContractsWorker>();
export function contractsWorker(ctx: AppContext): ContractsWorker {
  let w = workers.get(ctx);
  if (!w) workers.set(ctx, (w = new ContractsWorker(ctx)));
  return w;
}
