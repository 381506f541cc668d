import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { tx } from '../../db/database.js';
import type { WebhooksStore } from './store.js';
import { noticeDisabled, noticeFailing } from './notices.js';

/** How often (clock time) the worker looks at failing endpoints and prunes old deliveries. */
const HOUSEKEEPING_MS = 60_000;
/** Deliveries deleted per statement when pruning (one transaction each: short write locks). */
const PRUNE_BATCH = 5_000;

/** The delivery worker's slow chores (worker.ts runs them from its timer and `runDue`). */
export class Housekeeping {
  private lastHousekeeping = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly ctx: AppContext,
    private readonly store: WebhooksStore,
    /** Drops the dispatcher's rows read ahead (an endpoint it disabled). */
    private readonly forgetReadAhead: () => void,
  ) {}

  /**
   * The failing-endpoint lifecycle and retention (docs/webhooks.md), at most once a minute of the
   * clock: an endpoint failing for `failing_notice_ms` is reported once (a warning in the log, a
   * line on the status page, a notice to its account's integrator: notices.ts); one failing for `auto_disable_after_days` is disabled, its reason
   * kept, its pending deliveries canceled; finished deliveries (and their attempts) older than
   * `retention_days` are deleted.
   */
  run(): void {
    const now = this.ctx.clock.now();
    if (now - this.lastHousekeeping < HOUSEKEEPING_MS) return;
    this.lastHousekeeping = now;
    const cfg = this.ctx.config.webhooks;
    try {
      for (const ep of this.store.failingSince(now - cfg.failing_notice_ms)) {
        const days = cfg.auto_disable_after_days;
        if (days > 0 && ep.failing_since_ms! <= now - days * 86_400_000) {
          this.autoDisable(ep.id, ep.failing_since_ms!, now);
        } else if (!ep.failing_noticed) {
          tx(this.ctx.db, () => {
            this.store.setNoticed(ep.id);
            noticeFailing(this.store, ep, now);
          });
          this.ctx.log.warn(
            { event: 'webhook_endpoint.failing', endpoint: ep.id, account: ep.account_id, url: ep.url, failing_since: isoTime(ep.failing_since_ms!) },
            'webhook endpoint failing',
          );
        }
      }
      const cutoff = isoTime(now - cfg.retention_days * 86_400_000);
      while (this.store.prune(cutoff, PRUNE_BATCH) === PRUNE_BATCH);
      this.store.pruneReplays(cutoff);
    } catch (err) {
      this.ctx.log.error({ err }, 'webhook housekeeping failed; it runs again in a minute');
    }
  }

  private autoDisable(id: string, since: number, now: number): void {
    const days = this.ctx.config.webhooks.auto_disable_after_days;
    const at = isoTime(now);
    const reason = `Disabled automatically: every delivery failed since ${isoTime(since)} (${days} days).`;
    tx(this.ctx.db, () => {
      const ep = this.store.endpoint(id);
      if (!ep || ep.disabled) return;
      this.store.updateEndpoint({ id, description: ep.description, disabled: 1, disabled_reason: reason, updated_at: at });
      this.store.cancelPending(id, `endpoint_disabled: failing since ${isoTime(since)}`, at);
      this.store.markDisabled(id, now, this.store.cursor());
      noticeDisabled(this.store, ep, reason, 'failing', now);
    });
    this.forgetReadAhead();
    this.ctx.log.warn({ event: 'webhook_endpoint.disabled', endpoint: id, reason }, 'webhook endpoint disabled');
  }
}
