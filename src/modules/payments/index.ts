import type { PosdModule } from '../../api/module.js';
import { paymentRoutes } from './routes.js';

export const paymentsModule: PosdModule = { name: 'payments', api: paymentRoutes };
