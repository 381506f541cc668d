import { Type } from '@sinclair/typebox';
import { sendCommitted } from '../../api/idempotency.js';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { notFound } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { CreateProductBody, ProductSchema, UpdateProductBody } from './schema.js';
import { createProduct, getProduct, listProducts, updateProduct } from './service.js';

export function productRoutes(app: ApiApp, ctx: AppContext): void {
  app.post('/products', { schema: { tags: ['products'], body: CreateProductBody, response: { 201: ProductSchema, ...ErrorResponses } } }, async (req, reply) =>
    sendCommitted(ctx.db, req, reply, 201, () => createProduct(ctx, requireAccount(req), req.body)),
  );

  app.get(
    '/products',
    { schema: { tags: ['products'], querystring: Type.Object(PageQuery), response: { 200: Type.Array(ProductSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { accountIds, liveMode } = readScope(req);
      const { rows, total } = listProducts(ctx, accountIds, liveMode, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/products/:id', { schema: { tags: ['products'], params: IdParams, response: { 200: ProductSchema, ...ErrorResponses } } }, async (req) => {
    const product = getProduct(ctx, requireAccount(req), req.params.id);
    if (!product) throw notFound('product', req.params.id);
    return product;
  });

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/products/:id',
      schema: { tags: ['products'], params: IdParams, body: UpdateProductBody, response: { 200: ProductSchema, ...ErrorResponses } },
      handler: async (req, reply) => sendCommitted(ctx.db, req, reply, 200, () => updateProduct(ctx, requireAccount(req), req.params.id, req.body)),
    });
  }

  // The hosted reference's "archive a product": the product stays (checkouts refer to it) and is
  // answered with status `archived`.
  app.delete('/products/:id', { schema: { tags: ['products'], params: IdParams, response: { 200: ProductSchema, ...ErrorResponses } } }, async (req, reply) =>
    sendCommitted(ctx.db, req, reply, 200, () => updateProduct(ctx, requireAccount(req), req.params.id, { status: 'archived' })),
  );
}
