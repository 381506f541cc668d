import type { Panel, StatusView } from './panels.js';

import { esc } from '../../api/html.js';

/** Plain server-rendered HTML: no scripts, no CDN, one small stylesheet, readable on a phone. */
export const CSS = `
*{box-sizing:border-box}body{margin:0;font:15px/1.4 system-ui,sans-serif;color:#1d2327;background:#f4f5f7}
header{display:flex;justify-content:space-between;align-items:center;padding:.6rem 1rem;background:#1d2327;color:#fff}
header h1{font-size:1.05rem;margin:0}main{display:grid;gap:1rem;padding:1rem;grid-template-columns:repeat(auto-fit,minmax(320px,1fr))}
section{background:#fff;border-radius:8px;padding:.8rem 1rem;box-shadow:0 1px 2px #0002;overflow-x:auto}
h2{font-size:1rem;margin:0 0 .5rem}table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .4rem;border-bottom:1px solid #eee;font-size:.9rem}
.ok{color:#18794e}.bad{color:#c62828;font-weight:600}.muted{color:#687076}button{font:inherit;padding:.35rem .8rem;border-radius:6px;border:1px solid #888;background:#fff;cursor:pointer}
form.inline{display:inline}.login{max-width:340px;margin:12vh auto;background:#fff;padding:1.5rem;border-radius:8px;box-shadow:0 1px 3px #0003}
.login input{width:100%;padding:.5rem;margin:.3rem 0 1rem;font:inherit}.error{color:#c62828}
.verdict{margin:1rem 1rem 0;padding:.7rem 1rem;border-radius:8px;background:#fff;box-shadow:0 1px 2px #0002}
.verdict.good{border-left:6px solid #18794e}.verdict.problems{border-left:6px solid #c62828}.verdict h2{margin:0}.verdict ul{margin:.4rem 0 0;padding-left:1.2rem}
.verdict li{margin:.25rem 0;overflow-wrap:anywhere}.verdict .fix{display:block;color:#445}
.replay{margin:.3rem 0}.replay input{font:inherit;width:15.5em;max-width:100%}
.notice{margin:1rem 1rem 0;padding:.5rem 1rem;background:#fff8c5;border-radius:6px}.foot{padding:0 1rem}h3{font-size:.9rem;margin:.6rem 0 .2rem}
@media (max-width:480px){main{padding:.5rem;grid-template-columns:1fr}td,th{font-size:.85rem}}
`;

function layout(title: string, body: string, opts: { refresh?: number } = {}): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${opts.refresh ? `<meta http-equiv="refresh" content="${opts.refresh}">` : ''}
<title>${esc(title)}</title><link rel="stylesheet" href="/ops.css"></head><body>${body}</body></html>`;
}

export function loginPage(opts: { loginToken: string; error?: string; configured: boolean }): string {
  if (!opts.configured) {
    return layout(
      'posd: status',
      `<div class="login"><h1>posd</h1><p>No manager password is set yet. On the box, run:</p>
<pre>posd manager set-password</pre><p class="muted">then reload this page.</p></div>`,
    );
  }
  return layout(
    'posd: log in',
    `<form class="login" method="post" action="/login"><h1>posd status</h1>
${opts.error ? `<p class="error" role="alert">${esc(opts.error)}</p>` : ''}
<label for="password">Manager password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
<input type="hidden" name="_csrf" value="${esc(opts.loginToken)}">
<button type="submit">Log in</button></form>`,
  );
}

export const money = (cents: number, currency: string) => `${currency} ${(cents / 100).toFixed(2)}`;
const bytes = (n: number) => (n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GiB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(0)} KiB`);

function panel<T>(id: string, title: string, p: Panel<T>, render: (data: T) => string): string {
  let body: string;
  if (p.state === 'not_configured') body = '<p class="muted">not configured</p>';
  else if (p.state === 'error') body = `<p class="bad">could not read: ${esc(p.message)}</p>`;
  else body = render(p.data);
  return `<section id="${id}" data-state="${p.state}"><h2>${esc(title)}</h2>${body}</section>`;
}

export function table(headers: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return `<p class="muted">${esc(empty)}</p>`;
  return `<table><thead><tr>${headers.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r) => `<tr>${r.join('')}</tr>`)
    .join('')}</tbody></table>`;
}

export const td = (v: unknown, cls = '') => `<td${cls ? ` class="${cls}"` : ''}>${esc(v)}</td>`;

/** First on the page: "All good", or each problem in one line with what to do. */
function verdict(view: StatusView): string {
  if (view.verdict.length === 0) return '<section id="verdict" class="verdict good" data-state="good"><h2 class="ok">All good</h2></section>';
  return `<section id="verdict" class="verdict problems" data-state="problems"><h2 class="bad">${view.verdict.length === 1 ? '1 thing needs' : `${view.verdict.length} things need`} attention</h2><ul>${view.verdict
    .map((p) => `<li><span class="problem">${esc(p.problem)}</span>${p.fix ? `<span class="fix">What to do: ${esc(p.fix)}</span>` : ''}</li>`)
    .join('')}</ul></section>`;
}

/** `extra`: sections of other files (the outage view): `top` after the verdict, `panels` after the page's own. */
export function statusPage(view: StatusView, csrf: string, notice?: string, extra: { top?: string; panels?: string } = {}): string {
  const terminals = panel('terminals', 'Terminals', view.terminals, (list) =>
    table(
      ['Terminal', 'Link', 'State', 'Last seen'],
      list.map((t) => [
        td(t.name ?? t.id),
        td(t.link ?? ''),
        `<td class="${t.available ? 'ok' : 'bad'}" data-terminal="${esc(t.id)}">${t.available ? 'available' : 'unavailable'}</td>`,
        td(t.last_seen_at ?? 'never', 'muted'),
      ]),
      'No terminals registered.',
    ),
  );
  const commands = panel('commands', 'Commands in flight', view.commands, (list) =>
    table(
      ['Command', 'Terminal', 'State', 'Amount', 'Since'],
      list.map((c) => [td(c.id), td(c.terminal_id), td(c.state), td(money(c.amount_in_cents, c.currency)), td(c.created_at, 'muted')]),
      'Nothing in flight.',
    ),
  );
  const sales = panel('sales', "Today's sales", view.sales, (list) =>
    table(
      ['Method', 'Currency', 'Count', 'Total'],
      list.map((s) => [td(s.method), td(s.currency), td(s.count), td(money(s.amount_in_cents, s.currency))]),
      'No sales yet today.',
    ),
  );
  const webhooks = panel('webhooks', 'Webhook endpoints with failing deliveries', view.webhooks, (list) =>
    list.length === 0
      ? '<p class="ok">Every delivery is going through.</p>'
      : list
          .map(
            (e) => `<h3>${esc(e.url)} <span class="muted">${esc(e.account_id)}</span></h3>${
              e.disabled_reason ? `<p class="bad">${esc(e.disabled_reason)}</p>` : e.failing_since ? `<p class="bad">Failing since ${esc(e.failing_since)}.</p>` : ''
            }${
              view.can_replay && e.replay_since
                ? `<form class="replay" method="post" action="/ops/endpoints/${encodeURIComponent(e.endpoint_id)}/replay"><input type="hidden" name="_csrf" value="${esc(csrf)}"><label>Replay failures since <input name="since" value="${esc(e.replay_since)}" required maxlength="40" inputmode="text"></label> <button type="submit">Replay failures</button></form>`
                : ''
            }${table(
              ['Event', 'Attempts', 'Last answer', 'Last try', ''],
              e.deliveries.map((d) => [
                td(d.event_type),
                td(d.attempts),
                td(d.last_response_code ?? d.last_error ?? '', 'bad'),
                td(d.updated_at, 'muted'),
                view.can_resend
                  ? `<td><form class="inline" method="post" action="/ops/deliveries/${encodeURIComponent(d.delivery_id)}/resend"><input type="hidden" name="_csrf" value="${esc(csrf)}"><button type="submit">Resend</button></form></td>`
                  : '<td></td>',
              ]),
              '',
            )}`,
          )
          .join(''),
  );
  const sync = panel('sync', 'Sync with central', view.sync, (s) =>
    table(
      ['', ''],
      [
        [td('Connected'), td(s.connected ? 'yes' : 'no', s.connected ? 'ok' : 'bad')],
        [td('Last success'), td(s.last_success_at ?? 'never')],
        [td('Records waiting'), td(s.records_waiting)],
        [td('Oldest waiting'), td(s.oldest_waiting_at ?? '-')],
        [td('Last error'), td(s.last_error ?? '-', s.last_error ? 'bad' : '')],
      ],
      '',
    ),
  ).replace(
    '</section>',
    `<p class="muted">${esc(view.sync_recorded.count)} facts recorded for central${view.sync_recorded.oldest ? `, oldest ${esc(view.sync_recorded.oldest)}` : ''}.</p></section>`,
  );
  const disk = panel('disk', 'Disk and backups', view.disk, (d) => {
    const lowDisk = d.free_bytes < 1 << 30 || d.free_bytes / Math.max(1, d.total_bytes) < 0.1;
    return table(
      ['', ''],
      [
        [td('Data folder'), td(d.data_dir)],
        [td('Free disk'), td(`${bytes(d.free_bytes)} of ${bytes(d.total_bytes)}`, lowDisk ? 'bad' : 'ok')],
        [td('Database'), td(`${bytes(d.database_bytes)} (+ ${bytes(d.wal_bytes)} log), schema ${d.schema_version}`)],
        [td('Last backup'), d.last_backup ? td(`${d.last_backup.finished_at} (${bytes(d.last_backup.bytes ?? 0)})`, 'ok') : td('never', 'bad')],
        ...(d.last_failed_backup ? [[td('Last backup failed'), td(`${d.last_failed_backup.finished_at}: ${d.last_failed_backup.error ?? ''}`, 'bad')]] : []),
        [td('Backup folder'), td(d.backup_dir, 'muted')],
      ],
      '',
    );
  });
  const invoicing = panel('tax-invoicing', 'Tax invoices', view.tax_invoicing, (t) =>
    table(
      ['', ''],
      [
        [td('Live certifier'), td(t.live_certifier, t.live_certifier === 'none' ? 'bad' : 'ok')],
        ...(t.reason ? [[td('Live sales'), td(`no tax_invoice_url: ${t.reason}`, 'bad')]] : []),
        [td('Live invoices waiting'), td(t.live_waiting, t.live_waiting ? 'bad' : '')],
      ],
      '',
    ),
  );
  return layout(
    'posd: status',
    `<header><h1>posd status</h1><form class="inline" method="post" action="/logout"><input type="hidden" name="_csrf" value="${esc(csrf)}"><button type="submit">Log out</button></form></header>
${verdict(view)}${extra.top ?? ''}
${notice ? `<p role="status" class="notice">${esc(notice)}</p>` : ''}
<main>${terminals}${commands}${sales}${webhooks}${sync}${disk}${invoicing}${extra.panels ?? ''}</main>
<p class="muted foot">Updated ${esc(view.generated_at)}; refreshes every 15 s. Day: ${esc(view.day.from)} to ${esc(view.day.until)}.</p>`,
    { refresh: 15 },
  );
}
