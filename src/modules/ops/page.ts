import type { Panel, StatusView } from './panels.js';
import type { SalesTotal } from '../../system/status-sources.js';
import { localDate, money, tdWhen, when } from './time.js';

import { esc } from '../../api/html.js';
import { sizeText as bytes } from './disk-check.js';
import { offlineLines } from './offline-verdict.js';

/** Plain server-rendered HTML: no scripts, no CDN, one small stylesheet, readable on a phone. */
export const CSS = `
*{box-sizing:border-box}body{margin:0;font:15px/1.4 system-ui,sans-serif;color:#1d2327;background:#f4f5f7}
header{display:flex;justify-content:space-between;align-items:center;padding:.6rem 1rem;background:#1d2327;color:#fff}
header h1{font-size:1.05rem;margin:0}main{display:grid;gap:1rem;padding:1rem;grid-template-columns:repeat(auto-fit,minmax(320px,1fr))}
section{background:#fff;border-radius:8px;padding:.8rem 1rem;box-shadow:0 1px 2px #0002}
h2{font-size:1rem;margin:0 0 .5rem}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .4rem;border-bottom:1px solid #eee;font-size:.9rem}
.ok{color:#18794e}.bad{color:#c62828;font-weight:600}.muted{color:#687076}button{font:inherit;padding:.35rem .8rem;border-radius:6px;border:1px solid #888;background:#fff;cursor:pointer}
form.inline{display:inline}.login{max-width:340px;margin:12vh auto;background:#fff;padding:1.5rem;border-radius:8px;box-shadow:0 1px 3px #0003}
.login input{width:100%;padding:.5rem;margin:.3rem 0 1rem;font:inherit}.error{color:#c62828}
.verdict{margin:1rem 1rem 0;padding:.7rem 1rem;border-radius:8px;background:#fff;box-shadow:0 1px 2px #0002}
.verdict.good{border-left:6px solid #18794e}.verdict.problems{border-left:6px solid #c62828}.verdict.offline{border-left:6px solid #b26a00}.amber{color:#8a5300}.verdict h2{margin:0}.verdict ul{margin:.4rem 0 0;padding-left:1.2rem}
.verdict li{margin:.25rem 0;overflow-wrap:anywhere}.verdict .fix{display:block;color:#445}
.replay{margin:.3rem 0}.replay input{font:inherit;width:15.5em;max-width:100%}
.notice{margin:1rem 1rem 0;padding:.5rem 1rem;background:#fff8c5;border-radius:6px}.foot{padding:0 1rem}h3{font-size:.9rem;margin:.6rem 0 .2rem}
td,th{overflow-wrap:break-word;vertical-align:top}table.pairs td:last-child,.url{overflow-wrap:anywhere}table.pairs td:first-child{white-space:nowrap}main>section{min-width:0}
section#stores,section#outages{grid-column:1/-1}select,input{max-width:100%}
.stale{color:#8a9096}.stale time{color:inherit}.counts{margin:0 0 .4rem}.endpoint{margin:0 0 .8rem}.endpoint p{margin:.2rem 0}
time{white-space:nowrap}
.store-filter{display:flex;flex-wrap:wrap;gap:.4rem;margin:0 0 .5rem}.store-filter input{width:14em}.pager{display:flex;gap:1rem;align-items:center;margin:.5rem 0 0}.pager a{padding:.2rem .5rem}
@media (max-width:480px){main{padding:.5rem;grid-template-columns:1fr}td,th{font-size:.85rem}section{padding:.6rem .7rem}
table.stack thead{display:none}table.stack tr{display:block;border-bottom:1px solid #ddd;padding:.25rem 0}
table.stack td{display:block;border:0;padding:.1rem .2rem}table.stack td[data-label]::before{content:attr(data-label) ": ";color:#687076}
table.stack td{overflow-wrap:anywhere}table.pairs td:first-child{width:38%;white-space:normal}time{white-space:normal}}
`;

function layout(title: string, body: string, opts: { refresh?: number } = {}): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${opts.refresh ? `<meta http-equiv="refresh" content="${opts.refresh}">` : ''}
<title>${esc(title)}</title><link rel="stylesheet" href="/ops.css"></head><body>${body}</body></html>`;
}

export function loginPage(opts: { loginToken: string; error?: string; configured: boolean; dataDir: string }): string {
  if (!opts.configured) {
    return layout(
      'posd: status',
      `<div class="login"><h1>posd</h1><p>No manager is set up yet. On the box, run:</p>
<pre>sudo -u posd posd managers add &lt;your name&gt; --data ${esc(opts.dataDir)}</pre><p class="muted">(as the user posd runs as, naming this box's data folder), then reload this page.</p></div>`,
    );
  }
  return layout(
    'posd: log in',
    `<form class="login" method="post" action="/login"><h1>posd status</h1>
${opts.error ? `<p class="error" role="alert">${esc(opts.error)}</p>` : ''}
<label for="name">Your name</label>
<input id="name" name="name" autocomplete="username" maxlength="64">
<label for="password">Your password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<input type="hidden" name="_csrf" value="${esc(opts.loginToken)}">
<button type="submit">Log in</button></form>`,
  );
}

export { money } from './time.js';

export function panel<T>(id: string, title: string, p: Panel<T>, render: (data: T) => string): string {
  let body: string;
  if (p.state === 'not_configured') body = '<p class="muted">not configured</p>';
  else if (p.state === 'error') body = `<p class="bad">could not read: ${esc(p.message)}</p>`;
  else body = render(p.data);
  return `<section id="${id}" data-state="${p.state}"><h2>${esc(title)}</h2>${body}</section>`;
}

/**
 * A table that never needs a sideways scroll: long values wrap, and on a phone each row stacks
 * its cells, each cell labelled with its column (`data-label`, shown by the stylesheet).
 */
export function table(headers: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return `<p class="muted">${esc(empty)}</p>`;
  const labelled = headers.some((h) => h !== '');
  const head = labelled ? `<thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead>` : '';
  const cell = (c: string, i: number) => (labelled && headers[i] ? c.replace(/^<td/, `<td data-label="${esc(headers[i])}"`) : c);
  return `<table class="${labelled ? 'stack' : 'pairs'}">${head}<tbody>${rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('')}</tbody></table>`;
}

export const td = (v: unknown, cls = '') => `<td${cls ? ` class="${cls}"` : ''}>${esc(v)}</td>`;

/** A name, with the id it stands for in its title (a person hovering, a test reading). */
export const named = (name: string, id: string, cls = '') => `<td${cls ? ` class="${cls}"` : ''} title="${esc(id)}" data-id="${esc(id)}">${esc(name)}</td>`;

/**
 * First on the page, at the level the page's colours agree with: green "All good"; amber "Working
 * offline" with what waits and until when; red "N things need attention", each problem in one line
 * with what to do (and, while offline, what waits under them).
 */
function verdict(view: StatusView): string {
  const waiting = view.offline ? offlineLines(view.offline, view.now_ms) : [];
  const waitingList = waiting.length ? `<ul class="waiting">${waiting.map((w) => `<li>${esc(w)}</li>`).join('')}</ul>` : '';
  if (view.level === 'good') return '<section id="verdict" class="verdict good" data-state="good"><h2 class="ok">All good</h2></section>';
  if (view.level === 'offline') {
    return `<section id="verdict" class="verdict offline" data-state="offline"><h2 class="amber">Working offline</h2>${waitingList}</section>`;
  }
  return `<section id="verdict" class="verdict problems" data-state="problems"><h2 class="bad">${view.verdict.length === 1 ? '1 thing needs' : `${view.verdict.length} things need`} attention</h2><ul>${view.verdict
    .map((p) => `<li><span class="problem">${esc(p.problem)}</span>${p.fix ? `<span class="fix">What to do: ${esc(p.fix)}</span>` : ''}</li>`)
    .join('')}</ul>${waiting.length ? `<h3 class="amber">Working offline</h3>${waitingList}` : ''}</section>`;
}

/** Whether the verdict has a problem from the check `name`: a panel's cell is red only then. */
const flagged = (view: StatusView, name: string) => view.verdict.some((p) => p.problem.startsWith(`${name}:`));

const csrfField = (csrf: string) => `<input type="hidden" name="_csrf" value="${esc(csrf)}">`;

/** An error kept from the past: red while it stands, grey with "recovered" once a later success passed it. */
function pastError(text: string, at: string | null, recovered: boolean, now: number): string {
  const time = at ? ` (${when(at, now)})` : '';
  return recovered
    ? `<td class="stale" data-stale="recovered">${esc(text)}${time}; recovered since</td>`
    : `<td class="bad" data-stale="current">${esc(text)}${time}</td>`;
}

function salesTable(list: SalesTotal[], empty: string): string {
  return table(
    ['Method', 'Currency', 'Count', 'Total'],
    list.map((s) => [td(s.method), td(s.currency), td(s.count), td(money(s.amount_in_cents, s.currency))]),
    empty,
  );
}

function webhooksPanel(view: StatusView, csrf: string, now: number): string {
  return panel('webhooks', 'Webhook endpoints with failing deliveries', view.webhooks, (list) =>
    list.length === 0
      ? '<p class="ok">Every delivery is going through.</p>'
      : list
          .map((e) => {
            const account = view.account_names[e.account_id] ?? e.account_id;
            const total = e.failed + e.retrying;
            const last = e.last
              ? `, last: ${esc(e.last.event_type)} ${esc(e.last.last_response_code ?? e.last.last_error ?? 'no answer')} at ${when(e.last.updated_at, now)}`
              : '';
            const count =
              total === 0
                ? ''
                : `<p class="${e.recovered ? 'stale' : 'bad'}" data-count="${total}">${total} failed ${total === 1 ? 'delivery' : 'deliveries'}${
                    e.retrying ? ` (${e.retrying} still being retried)` : ''
                  }${last}${e.recovered ? '; the endpoint answers again' : ''}</p>`;
            const state = e.disabled_reason
              ? `<p class="bad">${esc(e.disabled_reason)}</p>`
              : e.failing_since
                ? `<p class="bad">Failing since ${when(e.failing_since, now)}.</p>`
                : '';
            const button =
              view.can_replay && e.replay_since && e.failed > 0
                ? `<form class="replay" method="post" action="/ops/endpoints/${encodeURIComponent(e.endpoint_id)}/replay">${csrfField(csrf)}<input type="hidden" name="since" value="${esc(e.replay_since)}"><button type="submit">Resend the ${e.failed} failed</button></form>`
                : '';
            return `<article class="endpoint" data-endpoint="${esc(e.endpoint_id)}" data-state="${e.recovered ? 'recovered' : 'failing'}"><h3><span class="url">${esc(e.url)}</span> <span class="muted">${esc(account)}</span></h3>${state}${count}${button}</article>`;
          })
          .join(''),
  );
}

/** `extra`: sections of other files: `top` after the verdict (the outage view), `first` the first panel (a central's stores), `panels` after the page's own. */
export function statusPage(
  view: StatusView,
  csrf: string,
  notice?: string,
  extra: { top?: string; first?: string; panels?: string; manager?: string } = {},
): string {
  const now = view.now_ms;
  const terminals = panel('terminals', 'Terminals', view.terminals, (list) =>
    table(
      ['Terminal', 'Link', 'State', 'Last seen'],
      list.map((t) => [
        named(t.name ?? t.id, t.id),
        td(t.link ?? ''),
        `<td class="${t.available ? 'ok' : 'bad'}" data-terminal="${esc(t.id)}">${t.available ? 'available' : 'unavailable'}</td>`,
        tdWhen(t.last_seen_at, now),
      ]),
      'No terminals registered.',
    ),
  );
  const commands = panel('commands', 'Commands in flight', view.commands, (list) =>
    table(
      ['Sale', 'Terminal', 'State', 'Amount', 'Since'],
      list.map((c) => [
        named([c.external_id, c.description].filter(Boolean).join(' · ') || c.id, c.id),
        named(c.terminal_name ?? c.terminal_id, c.terminal_id),
        td(c.state),
        td(money(c.amount_in_cents, c.currency)),
        tdWhen(c.created_at, now),
      ]),
      'Nothing in flight.',
    ),
  );
  const toggle = view.show_sandbox
    ? '<p class="muted counts">Live sales; sandbox sales below, apart. <a href="/">Hide sandbox sales</a></p>'
    : '<p class="muted counts">Live sales only. <a href="/?sandbox=1">Show sandbox sales</a></p>';
  const sales = panel('sales', "Today's sales", view.sales, (list) => salesTable(list, 'No sales yet today.'))
    .replace('</h2>', `</h2>${toggle}`)
    .replace(
      /<\/section>$/,
      view.sandbox_sales
        ? `<div id="sandbox-sales"><h3>Sandbox (test) sales today</h3>${
            view.sandbox_sales.state === 'ok' ? salesTable(view.sandbox_sales.data, 'No sandbox sales today.') : '<p class="muted">not available</p>'
          }</div></section>`
        : '</section>',
    );
  const sync = panel('sync', 'Sync with central', view.sync, (s) => {
    const recovered = !!s.last_error && (s.connected || (!!s.last_success_at && !!s.last_error_at && s.last_success_at > s.last_error_at));
    return table(
      ['', ''],
      [
        // Red only when the verdict is (a link down past sync.alert_link_down_ms); amber while offline.
        [td('Connected'), td(s.connected ? 'yes' : 'no', s.connected ? 'ok' : flagged(view, 'sync') ? 'bad' : 'amber')],
        [td('Last success'), tdWhen(s.last_success_at, now, '')],
        [td('Records waiting'), td(s.records_waiting)],
        [td('Oldest waiting'), tdWhen(s.oldest_waiting_at, now, '', '-')],
        [td('Last error'), s.last_error ? pastError(s.last_error, s.last_error_at, recovered, now) : td('-')],
        // What a manager compares with posd tls ca at the central when the link refuses it.
        ...(s.central_pinned ? [[td('Central pinned'), td(`SHA-256 ${s.central_pinned}`)]] : []),
      ],
      '',
    );
  }).replace(
    /<\/section>$/,
    `<p class="muted">${esc(view.sync_recorded.count)} facts recorded for central${view.sync_recorded.oldest ? `, oldest ${when(view.sync_recorded.oldest, now)}` : ''}.</p></section>`,
  );
  const disk = panel('disk', 'Disk and backups', view.disk, (d) => {
    const lowDisk = d.free_bytes < 1 << 30 || d.free_bytes / Math.max(1, d.total_bytes) < 0.1;
    const lastFailure = d.last_failed_backup;
    const recovered = !!lastFailure && !!d.last_backup && d.last_backup.finished_at > lastFailure.finished_at;
    return table(
      ['', ''],
      [
        [td('Data folder'), td(d.data_dir)],
        [td('Free disk'), td(`${bytes(d.free_bytes)} of ${bytes(d.total_bytes)}`, lowDisk ? 'bad' : 'ok')],
        [td('Database'), td(`${bytes(d.database_bytes)} (+ ${bytes(d.wal_bytes)} log), schema ${d.schema_version}`)],
        [
          td('Last backup'),
          d.last_backup
            ? `<td class="ok">${when(d.last_backup.finished_at, now)} (${esc(bytes(d.last_backup.bytes ?? 0))})</td>`
            : td('never', flagged(view, 'last backup') ? 'bad' : 'muted'),
        ],
        ...(lastFailure ? [[td('Last backup failed'), pastError(lastFailure.error ?? 'failed', lastFailure.finished_at, recovered, now)]] : []),
        [td('Backup folder'), td(d.backup_dir, 'muted')],
        [
          td('TLS'),
          td(
            view.tls.on ? 'on (https, wss)' : view.tls.mode === 'off' ? 'off by setting (tls.mode): plain HTTP' : 'off (loopback only)',
            view.tls.on ? 'ok' : view.tls.mode === 'off' ? 'bad' : '',
          ),
        ],
        ...(view.tls.ca_fingerprint ? [[td('TLS CA'), td(`${view.tls.ca_file} SHA-256 ${view.tls.ca_fingerprint}`, 'muted')]] : []),
      ],
      '',
    );
  });
  const invoicing = panel('tax-invoicing', 'Tax invoices', view.tax_invoicing, (t) =>
    table(
      ['', ''],
      [
        // Red only with a live invoice waiting: what doctor and the verdict count as a problem.
        [td('Live certifier'), td(t.live_certifier, t.live_certifier !== 'none' ? 'ok' : t.live_waiting ? 'bad' : 'muted')],
        ...(t.reason ? [[td('Live sales'), td(`no tax_invoice_url: ${t.reason}`, t.live_waiting ? 'bad' : 'muted')]] : []),
        [td('Live invoices waiting'), td(t.live_waiting, t.live_waiting ? 'bad' : '')],
      ],
      '',
    ),
  );
  return layout(
    'posd: status',
    `<header><h1>posd status</h1><form class="inline" method="post" action="/logout">${csrfField(csrf)}${extra.manager ? `<span class="muted">${esc(extra.manager)}</span> ` : ''}<button type="submit">Log out</button></form></header>
${verdict(view)}${extra.top ?? ''}
${notice ? `<p role="status" class="notice">${esc(notice)}</p>` : ''}
<main>${extra.first ?? ''}${terminals}${commands}${sales}${webhooksPanel(view, csrf, now)}${view.stores && view.sync.state === 'not_configured' ? '' : sync}${disk}${invoicing}${extra.panels ?? ''}</main>
<p class="muted foot">Updated ${when(view.generated_at, now)}; refreshes every 15 s. Times are this box's: ${esc(view.zone)}. Today is ${esc(localDate(Date.parse(view.day.from)))}, from 00:00.</p>`,
    { refresh: 15 },
  );
}
