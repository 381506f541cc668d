import type { PosdModule } from '../../api/module.js';
import { customerRoutes } from './routes.js';

export const customersModule: PosdModule = { name: 'customers', api: customerRoutes };
