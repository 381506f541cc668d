import type { PosdModule } from '../../api/module.js';
import { balanceRoutes, ledgerRoutes } from './routes.js';
import { balanceTransactionFeed } from './feed.js';
import { ledgerRowTotals } from './sync.js';

export const ledgerModule: PosdModule = {
  name: 'ledger',
  api(app, ctx) {
    // GET /balances reads the ledger, so the ledger serves it (it sits beside /account in the docs).
    balanceRoutes(app, ctx);
    ledgerRoutes(app, ctx);
  },
  sync: { feed: { balance_transaction: balanceTransactionFeed }, totals: ledgerRowTotals },
};
