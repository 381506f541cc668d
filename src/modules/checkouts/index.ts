import type { PosdModule } from '../../api/module.js';
import { takeProductInventory } from '../products/service.js';
import { checkoutRoutes } from './routes.js';

/** A paid checkout takes its units off its products' inventory (hosted section 4, `inventory_quantity`). */
export const checkoutsModule: PosdModule = {
  name: 'checkouts',
  api: checkoutRoutes,
  checkout: { afterPay: (ctx, _account, checkout) => takeProductInventory(ctx, checkout.items) },
};
