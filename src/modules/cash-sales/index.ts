import type { PosdModule } from '../../api/module.js';
import { cashSaleRoutes } from './routes.js';
import { taxInvoiceWorker } from '../tax-invoices/service.js';
import { cashSalePush } from './sync.js';

export const cashSalesModule: PosdModule = {
  name: 'cash-sales',
  api: cashSaleRoutes,
  workers: (ctx) => [taxInvoiceWorker(ctx)],
  sync: { push: { cash_sale: cashSalePush } },
};
