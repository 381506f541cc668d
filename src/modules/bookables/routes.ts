import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { readScope, requireAccount } from '../../api/auth.js';
import { pageOf, setPageHeaders } from '../../api/pagination.js';
import {
  ResourceCreateBody,
  ResourceListQuery,
  ResourcePatchBody,
  ResourceSchema,
  ServiceCreateBody,
  ServiceListQuery,
  ServicePatchBody,
  ServiceSchema,
  StaffCreateBody,
  StaffPatchBody,
  StaffSchema,
  ActiveListQuery,
} from './schema.js';
import {
  baseUrlOf,
  createResource,
  createService,
  createStaff,
  listBookables,
  resourceRow,
  resourceView,
  serviceRow,
  serviceView,
  staffRow,
  staffView,
  updateResource,
  updateService,
  updateStaff,
} from './service.js';
import type { ResourceRow, ServiceRow, StaffRow } from './store.js';
import { IdParams, ErrorResponses } from '../../api/schemas.js';

/** Services, staff members and resources: what there is to book (gaps.md "Bookings"). */
export function bookablesRoutes(app: ApiApp, ctx: AppContext): void {
  const tags = ['scheduling'];

  app.post('/services', { schema: { tags, body: ServiceCreateBody, response: { 201: ServiceSchema, ...ErrorResponses } } }, async (req, reply) =>
    reply.code(201).send(createService(ctx, requireAccount(req), req.body)),
  );
  app.get(
    '/services',
    { schema: { tags, querystring: ServiceListQuery, response: { 200: Type.Array(ServiceSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { rows, total } = listBookables<ServiceRow>(
        ctx,
        'sched_services',
        { ...scope(req), active: req.query.active, kind: req.query.kind },
        page.limit,
        page.offset,
      );
      setPageHeaders(req, reply, page, total);
      return rows.map(serviceView);
    },
  );
  app.get('/services/:id', { schema: { tags, params: IdParams, response: { 200: ServiceSchema, ...ErrorResponses } } }, async (req) =>
    serviceView(serviceRow(ctx, requireAccount(req), req.params.id)),
  );
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/services/:id',
      schema: { tags, params: IdParams, body: ServicePatchBody, response: { 200: ServiceSchema, ...ErrorResponses } },
      handler: async (req) => updateService(ctx, requireAccount(req), req.params.id, req.body),
    });
  }

  app.post('/staff_members', { schema: { tags, body: StaffCreateBody, response: { 201: StaffSchema, ...ErrorResponses } } }, async (req, reply) =>
    reply.code(201).send(createStaff(ctx, requireAccount(req), req.body)),
  );
  app.get(
    '/staff_members',
    { schema: { tags, querystring: ActiveListQuery, response: { 200: Type.Array(StaffSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const { rows, total } = listBookables<StaffRow>(ctx, 'sched_staff_members', { ...scope(req), active: req.query.active }, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows.map(staffView);
    },
  );
  app.get('/staff_members/:id', { schema: { tags, params: IdParams, response: { 200: StaffSchema, ...ErrorResponses } } }, async (req) =>
    staffView(staffRow(ctx, requireAccount(req), req.params.id)),
  );
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/staff_members/:id',
      schema: { tags, params: IdParams, body: StaffPatchBody, response: { 200: StaffSchema, ...ErrorResponses } },
      handler: async (req) => updateStaff(ctx, requireAccount(req), req.params.id, req.body),
    });
  }

  app.post('/resources', { schema: { tags, body: ResourceCreateBody, response: { 201: ResourceSchema, ...ErrorResponses } } }, async (req, reply) =>
    reply.code(201).send(createResource(ctx, requireAccount(req), req.body, baseUrlOf(ctx, req))),
  );
  app.get(
    '/resources',
    { schema: { tags, querystring: ResourceListQuery, response: { 200: Type.Array(ResourceSchema), ...ErrorResponses } } },
    async (req, reply) => {
      const page = pageOf(req.query);
      const f = { ...scope(req), active: req.query.active, kind: req.query.kind, roomTypeId: req.query.room_type_id };
      const { rows, total } = listBookables<ResourceRow>(ctx, 'sched_resources', f, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      const base = baseUrlOf(ctx, req);
      return rows.map((r) => resourceView(r, base));
    },
  );
  app.get('/resources/:id', { schema: { tags, params: IdParams, response: { 200: ResourceSchema, ...ErrorResponses } } }, async (req) =>
    resourceView(resourceRow(ctx, requireAccount(req), req.params.id), baseUrlOf(ctx, req)),
  );
  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/resources/:id',
      schema: { tags, params: IdParams, body: ResourcePatchBody, response: { 200: ResourceSchema, ...ErrorResponses } },
      handler: async (req) => updateResource(ctx, requireAccount(req), req.params.id, req.body, baseUrlOf(ctx, req)),
    });
  }
}

function scope(req: Parameters<typeof readScope>[0]) {
  const s = readScope(req);
  return { accountIds: s.accountIds, liveMode: s.liveMode };
}
