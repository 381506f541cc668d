import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { CashSaleBody, CashSaleSchema } from './schema.js';
import { createCashSale } from './service.js';
import { commitIdempotentResponse } from '../../api/idempotency.js';
import { ErrorResponses } from '../../api/schemas.js';

export function cashSaleRoutes(app: ApiApp, ctx: AppContext): void {
  app.post(
    '/cash_sales',
    { schema: { tags: ['cash sales'], body: CashSaleBody, response: { 201: CashSaleSchema, ...ErrorResponses } } },
    async (req, reply) => {
      // The Idempotency-Key's answer commits with the sale, so a retry after a crash never records it twice.
      const sale = await createCashSale(ctx, requireAccount(req), req.body, (s) => commitIdempotentResponse(req, reply, 201, s));
      return reply.code(201).send(sale);
    },
  );
}
