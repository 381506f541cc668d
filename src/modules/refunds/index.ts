import type { PosdModule } from '../../api/module.js';
import { refundRoutes } from './routes.js';

export const refundsModule: PosdModule = { name: 'refunds', api: refundRoutes };
