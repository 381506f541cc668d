import { esc } from '../../api/html.js';
import { money, named, table, td } from './page.js';
import { localText, tdWhen, when } from './time.js';
import type { AccountOfflineView, OutageNow, OutageReport } from './outage.js';

/**
 * The outage view of the status page: a banner while a link is down, the offline-payments panel
 * with the manager's override form, and one report per recent outage. Server-rendered like the rest
 * of the page (no script): the page's 15 s refresh keeps the countdown current.
 */

/** "3 h 05 min", "12 min", "40 s". */
export function span(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${String(m % 60).padStart(2, '0')} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

const LINK_NAMES: Record<string, string> = { central: 'the central (internet)', processor: 'the card processor' };

export function outageBanner(now: OutageNow, nowMs: number): string {
  if (!now.offline) return '';
  const links = now.links.map((l) => LINK_NAMES[l.link] ?? l.link).join(' and ');
  const stored = now.stored.length ? now.stored.map((s) => `${s.count} ${esc(s.status)} (${esc(money(s.amount_in_cents, s.currency))})`).join(', ') : 'none';
  let deadline = '';
  if (now.next_deadline !== null && now.deadline_in_ms !== null) {
    deadline =
      now.deadline_in_ms > 0
        ? `<li id="outage-deadline" class="bad">The oldest stored payment must be forwarded within <strong>${esc(span(now.deadline_in_ms))}</strong> (by ${when(now.next_deadline, nowMs)}); posd expires it then and the sale is owed again.</li>`
        : `<li id="outage-deadline" class="bad">The oldest stored payment's deadline has passed (${when(now.next_deadline, nowMs)}).</li>`;
  }
  return `<section id="outage-banner" class="verdict offline" role="alert" data-state="offline"><h2 class="amber">Offline for ${esc(span(now.down_for_ms))}</h2><ul>
<li>No contact with ${esc(links)} since ${when(now.since, nowMs)}. Cash, the tills and the terminals go on; cards are stored within the offline caps.</li>
<li id="outage-stored">Stored card payments waiting: ${stored}.</li>
<li id="outage-records">Records waiting for the central: ${esc(now.records_waiting)}.</li>
${deadline}</ul></section>`;
}

/** The box's local time as a datetime-local value (the form's default and its reading are both local). */
function localInput(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

const csrfField = (csrf: string) => `<input type="hidden" name="_csrf" value="${esc(csrf)}">`;

export function offlinePaymentsPanel(accounts: AccountOfflineView[], csrf: string, nowMs: number): string {
  if (accounts.length === 0) return '';
  const rows = accounts.map((a) => [
    td(a.live_mode ? a.name : `${a.name} (sandbox)`),
    `<td class="${a.allowed_now ? 'ok' : 'bad'}" data-account="${esc(a.id)}">${a.allowed_now ? 'allowed' : 'refused'}</td>`,
    td(
      `${a.caps.allowed ? '' : 'off; '}${money(a.caps.max_payment_in_cents, a.currency)} each, ${money(a.caps.max_total_in_cents, a.currency)} in all, ${a.caps.max_count} payments, ${a.caps.max_age_hours} h`,
    ),
    a.override
      ? `<td data-override="${esc(a.id)}">until ${when(a.override.until, nowMs)} by ${esc(a.override.actor)}: ${esc(a.override.reason)}<form class="inline" method="post" action="/ops/offline/revoke">${csrfField(csrf)}<input type="hidden" name="account" value="${esc(a.id)}"><input type="hidden" name="reason" value="ended from the status page"><button type="submit">End override</button></form></td>`
      : td('none', 'muted'),
  ]);
  const options = accounts.map((a) => `<option value="${esc(a.id)}">${esc(a.live_mode ? a.name : `${a.name} (sandbox)`)} ${esc(a.id)}</option>`).join('');
  return `<section id="offline-payments" data-state="ok"><h2>Offline card payments</h2>${table(['Account', 'Storing now', 'Caps', 'Override'], rows, '')}
<h3>Allow offline card payments until a time</h3>
<form id="offline-allow" method="post" action="/ops/offline/allow">${csrfField(csrf)}
<p><label>Account <select name="account" required>${options}</select></label></p>
<p><label>Until (this box's time) <input type="datetime-local" name="until" required value="${esc(localInput(nowMs + 4 * 3600_000))}"></label></p>
<p><label>Reason <input name="reason" required maxlength="500" placeholder="why (kept in the audit)"></label></p>
<button type="submit">Allow</button></form>
<p class="muted">Every change is kept with who, when and why: <code>posd payments offline audit --account …</code>.</p></section>`;
}

/** A checkout's state as a manager says it (the API's names stay in the JSON report). */
const STATUS_WORDS: Record<string, string> = { unpaid: 'not paid', payment_in_progress: 'payment under way', processing: 'payment under way' };

function reportHtml(r: OutageReport, i: number, nowMs: number): string {
  const title = `Outage ${when(r.started_at, nowMs)} to ${r.ended_at ? when(r.ended_at, nowMs) : 'now'}`;
  const links = r.links.map((l) => LINK_NAMES[l.link] ?? l.link).join(', ');
  const sales = table(
    ['Method', 'Count', 'Total'],
    r.sales.map((s) => [td(s.method), td(s.count), td(money(s.amount_in_cents, s.currency))]),
    'No sales.',
  );
  const stored = table(
    ['Stored payments', 'Count', 'Total'],
    r.stored_payments.map((s) => [
      td(s.status, s.status === 'approved' ? 'ok' : s.status === 'declined' || s.status === 'expired' ? 'bad' : ''),
      td(s.count),
      td(money(s.amount_in_cents, s.currency)),
    ]),
    'No card payment was stored.',
  );
  const collect = table(
    ['Sale', 'Customer', 'Amount', 'Outcome', 'Checkout'],
    r.to_collect.map((c) => [
      td([c.external_id, c.description].filter(Boolean).join(' · ') || c.command_id),
      td([c.customer?.full_name, c.customer?.phone, c.customer?.email, c.customer?.tax_id ?? c.tax_id].filter(Boolean).join(' · ') || 'no customer data'),
      td(`${money(c.amount_in_cents, c.currency)}${c.card.last4 ? ` (${c.card.network ?? 'card'} ${c.card.last4})` : ''}`),
      td(`${c.status}${c.reason ? `: ${c.reason}` : ''}`, 'bad'),
      td(c.checkout_status === 'paid' ? 'paid since' : `${c.checkout_status ?? 'gone'}: to collect`, c.checkout_status === 'paid' ? 'ok' : 'bad'),
    ]),
    'Nothing to collect.',
  );
  const open = table(
    ['Sale', 'State', 'Amount', 'Made'],
    r.open_checkouts.items
      .slice(0, 20)
      .map((c) => [
        named(c.reference || 'no till reference', c.id),
        td(STATUS_WORDS[c.status] ?? c.status),
        td(money(c.amount_in_cents, c.currency)),
        tdWhen(c.created_at, nowMs),
      ]),
    'None left open.',
  );
  const rec = r.reconciliation;
  const recText: Record<string, string> = {
    ongoing: 'the outage is not over',
    pushing: `${rec.records_waiting} record(s) of the outage still waiting for the central`,
    unchecked: 'everything pushed; the days not reconciled since (posd reconcile)',
    equal: `equal to the central (checked ${rec.checked_at ? localText(rec.checked_at, nowMs) : '?'})`,
    different: `${rec.differences} difference(s) with the central (posd sync status)`,
    not_synced: 'this box does not sync with a central',
  };
  return `<article class="outage" data-outage="${i}" data-reconciliation="${esc(rec.state)}"><h3>${title} <span class="muted">${esc(links)}</span></h3>
${sales}${stored}<h3>Declined later: to collect (${r.to_collect.filter((c) => c.checkout_status !== 'paid').length})</h3>${collect}
<h3>Checkouts left open (${r.open_checkouts.total})</h3>${open}
<p class="reconciliation ${rec.state === 'equal' ? 'ok' : rec.state === 'different' ? 'bad' : ''}">Reconciliation: ${esc(recText[rec.state])}</p></article>`;
}

export function outagesPanel(reports: OutageReport[], nowMs: number): string {
  if (reports.length === 0) return '';
  return `<section id="outages" data-state="ok"><h2>Outage reports</h2>${reports.map((r, i) => reportHtml(r, i, nowMs)).join('')}
<p class="muted">As JSON: <code>posd outage report --json</code>.</p></section>`;
}
