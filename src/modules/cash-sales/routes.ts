import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { ErrorResponses } from '../ledger/schema.js';
import { CashSaleBody, CashSaleSchema } from './schema.js';
import { createCashSale } from './service.js';

export function cashSaleRoutes(app: ApiApp, ctx: AppContext): void {
  app.post(
    '/cash_sales',
    { schema: { tags: ['cash sales'], body: CashSaleBody, response: { 201: CashSaleSchema, ...ErrorResponses } } },
    async (req, reply) => reply.code(201).send(await createCashSale(ctx, requireAccount(req), req.body)),
  );
}
