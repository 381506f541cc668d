import type { PosdModule } from '../../api/module.js';
import { bankAccountRoutes } from './routes.js';

export const bankAccountsModule: PosdModule = { name: 'bank-accounts', api: bankAccountRoutes };
