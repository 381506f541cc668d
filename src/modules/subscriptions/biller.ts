import type { AppContext } from '../../context.js';
import { groupCommit } from '../../db/group-commit.js';
import type { Worker } from '../../api/module.js';
import { SubscriptionsService } from './service.js';

/**
 * Renewals and retries on the injected clock: every `subscriptions.check_interval_ms` it bills what
 * is due at `ctx.clock.now()`. Tests move a ManualClock and call `runDue()` themselves.
 */
export class SubscriptionBiller implements Worker {
  readonly name = 'subscription-billing';
  private readonly service: SubscriptionsService;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: AppContext) {
    this.service = new SubscriptionsService(ctx);
  }

  start(): void {
    // A run's charges join the next group commit (each its own savepoint in bill()), not a flush each.
    this.timer = setInterval(
      () => void groupCommit(this.ctx.db, () => this.runDue()).catch((err) => this.ctx.log.error({ err }, 'subscription billing run failed')),
      this.ctx.config.subscriptions.check_interval_ms,
    );
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Bills everything due now; returns how many charges were made. */
  runDue(): number {
    if (this.ctx.shutdown.aborted) return 0;
    return this.service.runDue();
  }
}

const billers = new WeakMap<AppContext, SubscriptionBiller>();
export function subscriptionBiller(ctx: AppContext): SubscriptionBiller {
  let b = billers.get(ctx);
  if (!b) billers.set(ctx, (b = new SubscriptionBiller(ctx)));
  return b;
}
