import type { PosdModule } from '../../api/module.js';
import { productRoutes } from './routes.js';
import { productFeed } from './feed.js';

export const productsModule: PosdModule = { name: 'products', api: productRoutes, sync: { feed: { product: productFeed } } };
