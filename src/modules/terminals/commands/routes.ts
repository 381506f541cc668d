import type { ApiApp } from '../../../api/module.js';
import { sendCommitted } from '../../../api/idempotency.js';
import type { AppContext } from '../../../context.js';
import { readScope, requireAccount } from '../../../api/auth.js';
import { pageOf, setPageHeaders } from '../../../api/pagination.js';
import { Type } from '@sinclair/typebox';
import { CommandIdParams, CommandSchema, CreateCommandBody, FinalCommandErrorSchema, ListCommandsQuery } from './schema.js';
import { cancelCommand, createCommand, getCommand, listCommands } from './service.js';
import { ErrorSchema, errorBodies } from '../../../api/schemas.js';
import { OfflineCapReachedSchema } from '../stored/schema.js';

const errors = errorBodies(400, 401, 403, 404, 422, 429);

export function commandRoutes(app: ApiApp, ctx: AppContext): void {
  app.post(
    '/terminal_session_commands',
    {
      schema: {
        tags: ['terminal session commands'],
        body: CreateCommandBody,
        response: { 200: CommandSchema, 201: CommandSchema, 409: ErrorSchema, ...errors, 422: OfflineCapReachedSchema },
      },
    },
    async (req, reply) =>
      sendCommitted(
        ctx.db,
        req,
        reply,
        (r) => (r.created ? 201 : 200),
        () => createCommand(ctx, requireAccount(req), req.body),
        (r) => r.command,
      ),
  );

  app.get(
    '/terminal_session_commands',
    { schema: { tags: ['terminal session commands'], querystring: ListCommandsQuery, response: { 200: Type.Array(CommandSchema), ...errors } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { terminal_id, status, external_id } = req.query;
      const { rows, total } = listCommands(ctx, readScope(req), { terminal_id, status, external_id }, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get(
    '/terminal_session_commands/:id',
    { schema: { tags: ['terminal session commands'], params: CommandIdParams, response: { 200: CommandSchema, ...errors } } },
    async (req) => getCommand(ctx, readScope(req), req.params.id),
  );

  app.delete(
    '/terminal_session_commands/:id',
    {
      schema: {
        tags: ['terminal session commands'],
        params: CommandIdParams,
        response: { 200: CommandSchema, 202: CommandSchema, 409: FinalCommandErrorSchema, ...errors },
      },
    },
    async (req, reply) =>
      sendCommitted(
        ctx.db,
        req,
        reply,
        (r) => r.status,
        () => cancelCommand(ctx, requireAccount(req), req.params.id),
        (r) => r.command,
      ),
  );
}
