import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { esc, seeOther } from '../../api/html.js';
import { centralSide } from '../../sync/central/sync-store.js';
import { decideHeld } from '../../sync/central/checks/review.js';
import { table, td } from './page.js';
import { tdWhen } from './time.js';

/** How many held records the panel lists (the rest: `posd sync held list`). */
const SHOWN = 50;

const csrfField = (csrf: string) => `<input type="hidden" name="_csrf" value="${esc(csrf)}">`;

/**
 * The central's "Held for review" panel (issue 32): the records held past `sync.review.*`, each with
 * a release and a reject form (the manager's reason required), the same decision as
 * `posd sync held release|reject`. Empty on a store box and when nothing is held.
 */
export function heldPanel(ctx: AppContext, csrf: string): string {
  if (ctx.config.role !== 'central') return '';
  const rows = centralSide(ctx.db).inReview(null, SHOWN + 1);
  if (rows.length === 0) return '';
  const now = ctx.clock.now();
  const form = (id: string, what: 'release' | 'reject', label: string) =>
    `<form class="inline held-${what}" method="post" action="/ops/held/${encodeURIComponent(id)}/${what}">${csrfField(csrf)}<input name="reason" required maxlength="400" placeholder="why (kept in the audit)" aria-label="${esc(label)} reason"><button type="submit">${esc(label)}</button></form>`;
  const body = table(
    ['Record', 'Store', 'Received', 'Why held', 'Decide'],
    rows
      .slice(0, SHOWN)
      .map((r) => [
        `<td data-record="${esc(r.id)}">${esc(`${r.kind} ${r.id}`)}</td>`,
        td(`${r.store_id} #${r.seq}`),
        tdWhen(r.received_at, now),
        td((r.reason ?? '').replace(/^review: /, '')),
        `<td>${form(r.id, 'release', 'Release')}${form(r.id, 'reject', 'Reject')}</td>`,
      ]),
    '',
  );
  const more = rows.length > SHOWN ? `<p class="muted">More held: <code>posd sync held list</code>.</p>` : '';
  return `<section id="held-review" data-state="attention"><h2>Held for review</h2>${body}${more}
<p class="muted">Released: applied within seconds, past the thresholds. Rejected: refused for good; the store box hears it. Who, when and why stay with the record.</p></section>`;
}

/** The page's POST guard: a manager's session (whose name the audit takes) and its CSRF token, or a refusal. */
type Guard = (
  req: FastifyRequest,
  reply: FastifyReply,
) => { denied: FastifyReply; session?: undefined } | { denied?: undefined; session: { manager_name: string } };

const Body = Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 200 })), reason: Type.String({ maxLength: 400 }) }, { additionalProperties: true });
const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }), decision: Type.Union([Type.Literal('release'), Type.Literal('reject')]) });
const Html = { 200: Type.String(), 303: Type.String(), 400: Type.String(), 403: Type.String() };

/** POST /ops/held/:id/release|reject from the panel: a manager's session, its CSRF token and a reason; audited with the manager's name. */
export function heldRoutes(app: FastifyInstance, ctx: AppContext, guard: Guard): void {
  app.post<{ Params: { id: string; decision: 'release' | 'reject' }; Body: { reason: string } }>(
    '/ops/held/:id/:decision',
    { schema: { hide: true, params: Params, body: Body, response: Html } },
    async (req, reply) => {
      const g = guard(req, reply);
      if (g.denied) return g.denied;
      const { id, decision } = req.params;
      const reason = req.body.reason.trim();
      const back = (notice: string) => seeOther(reply, `/?notice=${encodeURIComponent(notice.slice(0, 200))}`);
      if (ctx.config.role !== 'central') return back('Records are held for review at the central.');
      if (!reason) return back('Say why: the reason is kept with the record.');
      const note = `${reason} (manager ${g.session.manager_name}, status page)`;
      const ok = decideHeld(ctx, id, decision, note, isoTime(ctx.clock.now()));
      ctx.log.info(
        { record_id: id, decision, manager: g.session.manager_name, reason, ok },
        `manager ${decision === 'release' ? 'released' : 'rejected'} a held record`,
      );
      if (!ok) return back(`${id} is not held for review (decided already?).`);
      return back(decision === 'release' ? `${id} released: it is applied within seconds.` : `${id} rejected: the store box hears it.`);
    },
  );
}
