import type { StatusView } from './panels.js';
import type { StoreListing, StoreQuery, StoreState } from '../../system/status-sources.js';
import { esc } from '../../api/html.js';
import { age, tdWhen, when } from './time.js';
import { named, panel, table, td } from './page.js';

const STATE_WORDS: Record<StoreState, string> = { silent: 'silent', attention: 'records parked', new: 'not pushed yet', ok: 'ok' };
const STATE_CLASS: Record<StoreState, string> = { silent: 'bad', attention: 'bad', new: 'muted', ok: 'ok' };

/** The page's address with the stores filter `q` (and the rest of the page as it was). */
function href(q: StoreQuery): string {
  const p = new URLSearchParams();
  if (q.state) p.set('stores_state', q.state);
  if (q.text) p.set('stores_find', q.text);
  if (q.page && q.page > 1) p.set('stores_page', String(q.page));
  const s = p.toString();
  return `/${s ? `?${s}` : ''}#stores`;
}

function counts(list: StoreListing, silentMs: number, q: StoreQuery): string {
  const part = (state: StoreState, words: string) => {
    const n = list.counts[state];
    const cls = n > 0 ? STATE_CLASS[state] : 'muted';
    return q.state === state
      ? `<strong class="${cls}" data-count-state="${state}" data-count="${n}">${n} ${esc(words)}</strong>`
      : `<a class="${cls}" data-count-state="${state}" data-count="${n}" href="${esc(href({ state, text: q.text }))}">${n} ${esc(words)}</a>`;
  };
  return `<p class="counts" id="store-counts"><span data-total="${list.total}">${list.total} store${list.total === 1 ? '' : 's'}</span>: ${[
    part('silent', `silent (no push for more than ${age(silentMs)})`),
    part('attention', 'with records parked'),
    part('new', 'not pushed yet'),
    part('ok', 'ok'),
  ].join(' · ')}${q.state || q.text ? ` · <a href="/#stores">show all</a>` : ''}</p>`;
}

function filterForm(q: StoreQuery): string {
  const options = [['', 'every state'], ...Object.entries(STATE_WORDS)]
    .map(([v, w]) => `<option value="${v}"${(q.state ?? '') === v ? ' selected' : ''}>${esc(w)}</option>`)
    .join('');
  return `<form class="store-filter" method="get" action="/#stores" role="search"><label for="stores_state" class="muted">State</label><select id="stores_state" name="stores_state">${options}</select><label for="stores_find" class="muted">Store or account</label><input id="stores_find" name="stores_find" value="${esc(q.text ?? '')}" maxlength="100"><button type="submit">Filter</button></form>`;
}

function pager(list: StoreListing, q: StoreQuery): string {
  if (list.matched === 0) return '';
  const first = (list.page - 1) * list.per_page + 1;
  const last = Math.min(list.matched, list.page * list.per_page);
  const prev = list.page > 1 ? `<a rel="prev" href="${esc(href({ ...q, page: list.page - 1 }))}">‹ Previous</a>` : '';
  const next = list.page < list.pages ? `<a rel="next" href="${esc(href({ ...q, page: list.page + 1 }))}">Next ›</a>` : '';
  return `<p class="pager muted" data-page="${list.page}" data-pages="${list.pages}">Stores ${first}–${last} of ${list.matched}, the longest silent first. ${prev}${next}</p>`;
}

/**
 * A central's stores: the counts by state first (each a link to its stores), a filter (state, part
 * of a store id or account name; a plain GET form, no script), one page of the stores sorted by
 * silence, and links to the pages around it: usable at 1,000 stores (docs/operations.md).
 */
export function storesPanel(view: StatusView, q: StoreQuery): string {
  if (!view.stores) return '';
  const now = view.now_ms;
  const quiet = view.store_quiet_ms;
  return panel('stores', 'Stores', view.stores, (list) => {
    const rows = list.stores.map((s) => {
      const account = view.account_names[s.account_id] ?? s.account_id;
      const stale = s.state === 'silent';
      return [
        named(`${s.store_id} · ${account}${s.live_mode ? '' : ' (sandbox)'}`, s.store_id),
        `<td class="${STATE_CLASS[s.state]}" data-store-state="${s.state}">${esc(STATE_WORDS[s.state])}</td>`,
        tdWhen(s.last_push_at, now, stale ? 'bad' : s.last_push_at === null ? 'muted' : '', 'never'),
        // The box's own backlog, as it said at its last push (a box that stopped pushing keeps its last word).
        s.box_waiting === null
          ? td('not said', 'muted')
          : `<td class="${s.box_waiting > 0 && stale ? 'bad' : s.box_waiting > 0 ? '' : 'ok'}" data-box-waiting="${s.box_waiting}">${
              s.box_waiting === 0 ? 'none' : `${s.box_waiting}${s.box_waiting_since ? `, oldest ${when(s.box_waiting_since, now)}` : ''}`
            }</td>`,
        td(
          `${s.held + s.parked}${s.parked ? ` (${s.parked} parked: posd sync records)` : s.held ? ` (${s.held} held: posd sync held list)` : ''}`,
          s.parked ? 'bad' : '',
        ),
        // Records the central refused (checks, appliers, an operator's review): kept, never applied.
        `<td class="${s.rejected ? 'bad' : 'ok'}" data-rejected="${s.rejected}">${s.rejected ? `${s.rejected} refused` : 'none'}</td>`,
        // The projector's lag behind receipt, in the store's seqs (0 once it caught up).
        td(
          s.received_seq > s.applied_seq ? `${s.received_seq - s.applied_seq} seqs (applied up to ${s.applied_seq})` : 'none',
          s.received_seq > s.applied_seq ? 'muted' : '',
        ),
        td(s.lag_ms === null ? '-' : age(s.lag_ms), s.lag_ms !== null && s.lag_ms > quiet ? 'bad' : ''),
        s.reconciliation.reported_at
          ? `<td class="bad" data-reconciliation="different">differences reported for ${esc(s.reconciliation.day ?? '?')} (${when(s.reconciliation.reported_at, now)})</td>`
          : `<td class="ok" data-reconciliation="none">no difference reported</td>`,
      ];
    });
    const empty = list.total === 0 ? 'No store has pushed to this central yet.' : 'No store matches this filter.';
    return `${counts(list, quiet, q)}${list.total > 0 ? filterForm(q) : ''}${table(
      ['Store', 'State', 'Last push', 'Waiting at the box', 'Held here', 'Refused', 'Received, not applied', 'Lag', 'Reconciliation'],
      rows,
      empty,
    )}${pager(list, q)}`;
  });
}
