import type { PosdModule } from '../../api/module.js';
import { productRoutes } from './routes.js';

export const productsModule: PosdModule = { name: 'products', api: productRoutes };
