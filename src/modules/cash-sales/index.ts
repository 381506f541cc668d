import type { PosdModule } from '../../api/module.js';
import { cashSaleRoutes } from './routes.js';
import { taxInvoiceWorker } from '../tax-invoices/service.js';

export const cashSalesModule: PosdModule = { name: 'cash-sales', api: cashSaleRoutes, workers: (ctx) => [taxInvoiceWorker(ctx)] };
