import type { PosdModule } from '../../api/module.js';
import { checkoutPageRoutes } from './routes.js';

/** The buyer's checkout page (`checkout_url`): a test payment page in a sandbox, a summary live. */
export const checkoutPageModule: PosdModule = { name: 'checkout-page', root: checkoutPageRoutes };
