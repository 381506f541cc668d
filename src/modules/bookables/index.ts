import type { PosdModule } from '../../api/module.js';
import { bookablesRoutes } from './routes.js';

export const bookablesModule: PosdModule = { name: 'bookables', api: bookablesRoutes };
