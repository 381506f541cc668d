import type { PosdModule } from '../../api/module.js';
import { subscriptionRoutes } from './routes.js';
import { subscriptionBiller } from './biller.js';

export { SubscriptionsService } from './service.js';
export { subscriptionBiller, SubscriptionBiller } from './biller.js';
export { createSubscriptionsForCheckout } from './checkout-hook.js';

export const subscriptionsModule: PosdModule = { name: 'subscriptions', api: subscriptionRoutes, workers: (ctx) => [subscriptionBiller(ctx)] };
