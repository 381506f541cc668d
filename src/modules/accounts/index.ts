import type { PosdModule } from '../../api/module.js';
import { accountRoutes } from './routes.js';

export const accountsModule: PosdModule = { name: 'accounts', api: accountRoutes };
