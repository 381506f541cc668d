import type { PosdModule } from '../../api/module.js';
import { shippingRoutes } from './routes.js';

export { ShippingService, addBusinessDays } from './service.js';
export { resolveRegion, fold } from './regions.js';

export const shippingModule: PosdModule = { name: 'shipping', api: shippingRoutes };
