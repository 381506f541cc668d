import type { PosdModule } from '../../api/module.js';
import { ledgerRoutes } from './routes.js';

export const ledgerModule: PosdModule = { name: 'ledger', api: ledgerRoutes };
