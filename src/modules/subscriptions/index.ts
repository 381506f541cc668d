import type { PosdModule } from '../../api/module.js';
import { subscriptionRoutes } from './routes.js';
import { subscriptionBiller } from './biller.js';
import { subscriptionPush } from './sync.js';
import { subscriptionCheckoutHooks } from './checkout-hook.js';
import { subscriptionEventExamples } from './events.js';

export { SubscriptionsService } from './service.js';
export { subscriptionBiller, SubscriptionBiller } from './biller.js';
export { createSubscriptionsForCheckout } from './checkout-hook.js';

export const subscriptionsModule: PosdModule = {
  name: 'subscriptions',
  api: subscriptionRoutes,
  workers: (ctx) => [subscriptionBiller(ctx)],
  sync: { push: { subscription: subscriptionPush } },
  checkout: subscriptionCheckoutHooks,
  events: subscriptionEventExamples,
};
