import { Type } from '@sinclair/typebox';
import type { ApiApp } from '../../api/module.js';
import { requireAccount } from '../../api/auth.js';
import { PageQuery, pageOf, setPageHeaders } from '../../api/pagination.js';
import { errorBodies } from '../../api/schemas.js';
import { isoTime } from '../../clock.js';
import type { AppContext } from '../../context.js';
import { ApiError, invalid } from '../../errors.js';
import type { SecretBox } from '../../system/secret-box.js';
import { newSigningSecret } from '../../system/standard-webhooks.js';
import type { UrlGuard } from '../../system/url-guard.js';
import { noticeStore, type NoticeSettingsRow } from './notice-store.js';
import type { NoticeSender } from './notices.js';

const errors = errorBodies(400, 401, 403, 404, 422, 429);
const tags = ['webhooks'];

const SettingsSchema = Type.Object({
  account_id: Type.String(),
  live_mode: Type.Boolean(),
  url: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  updated_at: Type.Union([Type.String(), Type.Null()]),
  /** Only in the answer that set a URL where there was none: the secret notices are signed with. */
  signingSecret: Type.Optional(Type.String()),
});

const SettingsBody = Type.Object({
  url: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()])),
  email: Type.Optional(Type.Union([Type.String({ minLength: 3, maxLength: 254 }), Type.Null()])),
});

const NoticeSchema = Type.Object({
  id: Type.String(),
  type: Type.String(),
  endpoint_id: Type.String(),
  url_status: Type.String(),
  email_status: Type.String(),
  attempts: Type.Integer(),
  next_attempt_at: Type.Union([Type.String(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  payload: Type.Unknown(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

// One @, something on each side, a dot in the domain, no spaces: nodemailer takes the rest.
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function view(accountId: string, liveMode: boolean, row: NoticeSettingsRow | undefined) {
  return { account_id: accountId, live_mode: liveMode, url: row?.url ?? null, email: row?.email ?? null, updated_at: row?.updated_at ?? null };
}

/**
 * Where an account's operational notices go (docs/webhooks.md, Notices): `GET`/`PATCH`
 * `/webhook_notice_settings`, and `GET /webhook_notices`, what was told and how far each got.
 */
export function noticeRoutes(app: ApiApp, ctx: AppContext, guard: UrlGuard, box: SecretBox, sender: NoticeSender): void {
  const store = noticeStore(ctx.db);

  app.get(
    '/webhook_notice_settings',
    { schema: { tags, description: "The account's notice URL and e-mail address.", response: { 200: SettingsSchema, ...errors } } },
    async (req) => {
      const account = requireAccount(req);
      return view(account.id, req.auth.liveMode, store.noticeSettings(account.id));
    },
  );

  for (const method of ['PATCH', 'PUT'] as const) {
    app.route({
      method,
      url: '/webhook_notice_settings',
      schema: {
        tags,
        description:
          'Sets (or, with null, clears) the notice URL and e-mail address. A URL passes the same checks as an endpoint URL; setting one where there was none makes its signing secret, shown only in this answer.',
        body: SettingsBody,
        response: { 200: SettingsSchema, ...errors },
      },
      handler: async (req) => {
        const account = requireAccount(req);
        const before = store.noticeSettings(account.id);
        const url = req.body.url === undefined ? (before?.url ?? null) : req.body.url;
        const email = req.body.email === undefined ? (before?.email ?? null) : req.body.email;
        if (req.body.url) {
          const refused = await guard.check(req.body.url);
          if (refused.length > 0) throw new ApiError('webhook_url_refused', { errors: { url: refused } });
        }
        if (req.body.email) {
          if (!EMAIL.test(req.body.email)) throw invalid({ email: ['must be an e-mail address'] });
          if (!sender.emailEnabled) throw invalid({ email: ['this box sends no e-mail: no SMTP server is configured (webhooks.notices.smtp.host)'] });
        }
        const made = url !== null && !before?.secret ? newSigningSecret() : undefined;
        const secret = url === null ? null : made !== undefined ? box.seal(made) : before!.secret;
        store.putNoticeSettings({ account_id: account.id, live_mode: req.auth.liveMode ? 1 : 0, url, secret, email, now: isoTime(ctx.clock.now()) });
        const after = view(account.id, req.auth.liveMode, store.noticeSettings(account.id));
        return made === undefined ? after : { ...after, signingSecret: made };
      },
    });
  }

  app.get(
    '/webhook_notices',
    {
      schema: {
        tags,
        description: "The account's notices, newest first, with how far each channel got.",
        querystring: Type.Object(PageQuery),
        response: { 200: Type.Array(NoticeSchema), ...errors },
      },
    },
    async (req, reply) => {
      const account = requireAccount(req);
      const page = pageOf(req.query);
      const { rows, total } = store.noticesPage(account.id, req.auth.liveMode ? 1 : 0, page.limit, page.offset);
      setPageHeaders(req, reply, page, total);
      return rows.map((n) => ({
        id: n.id,
        type: n.type,
        endpoint_id: n.endpoint_id,
        url_status: n.url_status,
        email_status: n.email_status,
        attempts: n.attempts,
        next_attempt_at: n.next_attempt_ms === null ? null : isoTime(n.next_attempt_ms),
        last_error: n.last_error,
        payload: JSON.parse(n.payload) as unknown,
        created_at: n.created_at,
        updated_at: n.updated_at,
      }));
    },
  );
}
