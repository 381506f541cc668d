import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { notFound } from '../../errors.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';
import { createUser, getUser, listUsers } from './service.js';

const UserBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 254 }),
  name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  // The hosted service's name for it (hosted-api.md section 6); `name` and `full_name` are one value.
  full_name: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Null()])),
  phone: Type.Optional(Type.Union([Type.String({ maxLength: 40 }), Type.Null()])),
});

const UserSchema = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  full_name: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
});

/** `/users`: an account's users. The per-IP and per-test-key windows of spec 8 run in the API layer. */
export function userRoutes(app: ApiApp, ctx: AppContext): void {
  app.post('/users', { schema: { tags: ['users'], body: UserBody, response: { 200: UserSchema, 201: UserSchema, ...ErrorResponses } } }, async (req, reply) => {
    const { user, created } = createUser(ctx, requireAccount(req), req.body);
    return reply.code(created ? 201 : 200).send(user);
  });

  app.get(
    '/users',
    { schema: { tags: ['users'], querystring: Type.Object(PageQuery), response: { 200: Type.Array(UserSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { accountIds, liveMode } = readScope(req);
      const { rows, total } = listUsers(ctx, accountIds, liveMode, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows;
    },
  );

  app.get('/users/:id', { schema: { tags: ['users'], params: IdParams, response: { 200: UserSchema, ...ErrorResponses } } }, async (req) => {
    const { accountIds, liveMode } = readScope(req);
    const user = getUser(ctx, accountIds, liveMode, req.params.id);
    if (!user) throw notFound('user', req.params.id);
    return user;
  });
}
