import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { CreateTerminalBody, CreatedTerminalSchema, TerminalIdParams, TerminalSchema } from './schema.js';
import { createTerminal, getTerminal, listTerminals } from './service.js';
import { retireTerminal } from './retire.js';
import { errorBodies } from '../../api/schemas.js';
import { sealedResponses, secretBoxOf } from '../../system/secret-box.js';
import { sendCommitted } from '../../api/idempotency.js';

const errors = errorBodies(400, 401, 403, 404, 409, 422, 429);

export function terminalRoutes(app: ApiApp, ctx: AppContext): void {
  app.post(
    '/terminals',
    {
      schema: { tags: ['terminals'], body: CreateTerminalBody, response: { 201: CreatedTerminalSchema, ...errors } },
      // The answer holds the pairing token: its stored copy for Idempotency-Key replays is sealed.
      config: { idempotencyCodec: sealedResponses(secretBoxOf(ctx)) },
    },
    async (req, reply) =>
      sendCommitted(
        ctx.db,
        req,
        reply,
        201,
        () => createTerminal(ctx, requireAccount(req), req.body),
        ({ terminal, pairingToken }) => ({ ...terminal, pairing_token: pairingToken }),
      ),
  );

  app.get(
    '/terminals',
    { schema: { tags: ['terminals'], querystring: Type.Object(PageQuery), response: { 200: Type.Array(TerminalSchema), ...errors } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { rows, total } = listTerminals(ctx, readScope(req), page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/terminals/:id', { schema: { tags: ['terminals'], params: TerminalIdParams, response: { 200: TerminalSchema, ...errors } } }, async (req) =>
    getTerminal(ctx, readScope(req), req.params.id),
  );

  app.delete(
    '/terminals/:id',
    { schema: { tags: ['terminals'], params: TerminalIdParams, response: { 200: TerminalSchema, ...errors } } },
    async (req, reply) => sendCommitted(ctx.db, req, reply, 200, () => retireTerminal(ctx, requireAccount(req), req.params.id)),
  );
}
