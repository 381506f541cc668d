import type { FastifyRequest } from 'fastify';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { requireAccount } from '../../api/auth.js';
import { QuoteBody, QuoteResponse, SettingsBody, SettingsSchema, ShippingInfo } from './schema.js';
import { offeredDestinations, ShippingService } from './service.js';
import { errorBodies } from '../../api/schemas.js';

const errors = errorBodies(400, 401, 403, 404, 429);

/** Where the catalogue is edited: this daemon's own settings endpoint, absolute like every URL we hand out. */
function settingsUrl(ctx: AppContext, req: FastifyRequest): string {
  const base = ctx.config.http.public_url
    ? ctx.config.http.public_url.replace(/\/$/, '')
    : `${req.protocol}://${req.headers.host ?? `${ctx.config.http.host}:${ctx.config.http.port}`}`;
  return `${base}/api/store_shipping/settings`;
}

export function shippingRoutes(app: ApiApp, ctx: AppContext): void {
  const shipping = new ShippingService(ctx);
  const tags = ['store shipping'];

  app.get('/store_shipping', { schema: { tags, response: { 200: ShippingInfo, ...errors } } }, async (req) => {
    const settings = shipping.settings(requireAccount(req));
    return {
      settings_url: settingsUrl(ctx, req),
      enabled: settings.enabled,
      destinations: offeredDestinations(settings),
    };
  });

  app.post('/store_shipping', { schema: { tags, body: QuoteBody, response: { 200: QuoteResponse, ...errors } } }, async (req, reply) => {
    const options = shipping.quote(requireAccount(req), req.body);
    // A quote creates nothing: 200, not 201.
    return reply.code(200).send({ options });
  });

  app.get('/store_shipping/settings', { schema: { tags, response: { 200: SettingsSchema, ...errors } } }, async (req) =>
    shipping.settings(requireAccount(req)),
  );

  for (const method of ['PUT', 'PATCH'] as const) {
    app.route({
      method,
      url: '/store_shipping/settings',
      schema: { tags, body: SettingsBody, response: { 200: SettingsSchema, ...errors } },
      handler: async (req) => shipping.update(requireAccount(req), req.body),
    });
  }
}
