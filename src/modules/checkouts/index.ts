import type { PosdModule } from '../../api/module.js';
import { checkoutRoutes } from './routes.js';

export const checkoutsModule: PosdModule = { name: 'checkouts', api: checkoutRoutes };
