import type { PosdModule } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { secretBoxOf, type SecretBox } from '../../system/secret-box.js';
import { UrlGuard, type Resolver } from '../../system/url-guard.js';
import { DeliveryWorker } from './worker.js';
import { WebhooksService } from './service.js';
import { webhookRoutes } from './routes.js';
import { provideWebhookStatus } from './status.js';
import { webhookHealth } from './store.js';
import { NoticeSender } from './notices.js';
import { noticeRoutes } from './notice-routes.js';
import { metrics } from '../../system/metrics.js';

export { DeliveryWorker } from './worker.js';
export { UrlGuard, type Resolver } from '../../system/url-guard.js';
export { sign, signedHeaders, verify, newSigningSecret } from '../../system/standard-webhooks.js';

interface Parts {
  guard: UrlGuard;
  box: SecretBox;
  worker: DeliveryWorker;
  service: WebhooksService;
  notices: NoticeSender;
}

const byContext = new WeakMap<AppContext, Parts>();

/**
 * The webhooks module. `resolver` replaces DNS for the URL checks and the delivery sockets (tests
 * make a name resolve inward with it).
 */
export function createWebhooksModule(opts: { resolver?: Resolver } = {}): PosdModule {
  const parts = (ctx: AppContext): Parts => {
    let p = byContext.get(ctx);
    if (!p) {
      const guard = new UrlGuard(ctx.config.webhooks.allow_cidrs, opts.resolver);
      const box = secretBoxOf(ctx);
      const worker = new DeliveryWorker(ctx, guard, box);
      p = { guard, box, worker, service: new WebhooksService(ctx, guard, box, worker), notices: new NoticeSender(ctx, guard, box) };
      byContext.set(ctx, p);
    }
    return p;
  };
  return {
    name: 'webhooks',
    api: (app, ctx) => {
      webhookRoutes(app, parts(ctx).service, parts(ctx).box, ctx);
      noticeRoutes(app, ctx, parts(ctx).guard, parts(ctx).box, parts(ctx).notices);
      provideWebhookStatus(ctx, parts(ctx).worker, parts(ctx).service);
      const m = metrics(ctx);
      m.gauge({
        name: 'posd_webhook_endpoints_failing',
        help: 'Enabled endpoints whose every automatic attempt has failed since their last success',
        collect() {
          this.set(webhookHealth(ctx.db, ctx.clock.now()).failing.length);
        },
      });
      m.gauge({
        name: 'posd_webhook_deliveries_pending',
        help: 'Deliveries waiting to be sent (first attempts and retries)',
        collect() {
          this.set(webhookHealth(ctx.db, ctx.clock.now()).pending);
        },
      });
    },
    workers: (ctx) => [parts(ctx).worker, parts(ctx).notices],
  };
}

export const webhooksModule = createWebhooksModule();

/** The notice sender of a running daemon (tests call `runDue()` on it after moving the clock). */
export function noticeSenderOf(ctx: AppContext): NoticeSender | undefined {
  return byContext.get(ctx)?.notices;
}

/** The delivery worker of a running daemon (tests call `runDue()` on it after moving the clock). */
export function deliveryWorkerOf(ctx: AppContext): DeliveryWorker | undefined {
  return byContext.get(ctx)?.worker;
}
