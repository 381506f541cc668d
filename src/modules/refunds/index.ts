import type { PosdModule } from '../../api/module.js';
import { refundRoutes } from './routes.js';
import { refundPush } from './sync.js';
import { refundEventExamples } from './views.js';

export const refundsModule: PosdModule = { name: 'refunds', api: refundRoutes, sync: { push: { refund: refundPush } }, events: refundEventExamples };
