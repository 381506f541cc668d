import type { AppContext } from '../../context.js';
import { esc } from '../../api/html.js';
import { accountsOf } from '../../accounts/service.js';
import { embedOriginsOf } from '../../accounts/embed-origins.js';

/**
 * The status page's "Accounts" panel (issue 34): each account's event formats, where a merchant
 * moving from the hosted service meets them (spec 6.3: `unified` for new accounts and sandboxes,
 * `both` for an account that continues a hosted one or a shop plugin that waits for
 * `payment_intent.*`), and who may frame its checkout page (the embedded checkout).
 */
export function accountFormatsPanel(ctx: AppContext): string {
  let rows: string[];
  try {
    rows = accountsOf(ctx)
      .accounts()
      .map((a) => {
        const embed = embedOriginsOf(a);
        const framing = embed.any ? 'any origin (sandbox)' : embed.origins.length ? embed.origins.join(', ') : 'none';
        const formats = a.event_format === 'both' ? 'both: intent.* and legacy payment_intent.*' : 'unified: intent.* only';
        return `<tr data-account="${esc(a.id)}"><td title="${esc(a.id)}">${esc(a.name || a.id)}${a.live_mode ? '' : ' (sandbox)'}</td><td data-formats="${esc(a.event_format)}">${esc(formats)}</td><td>${esc(framing)}</td></tr>`;
      });
  } catch {
    return '<section id="accounts" data-state="error"><h2>Accounts</h2><p class="muted">not available</p></section>';
  }
  return `<section id="accounts" data-state="ok"><h2>Accounts</h2><table><thead><tr><th>Account</th><th>Event formats</th><th>Embedded checkout framed by</th></tr></thead><tbody>${rows.join('')}</tbody></table>
<p class="muted">A shop plugin that marks orders paid on payment_intent.succeeded, or an account that continues a hosted one, needs both: posd accounts set &lt;account&gt; --event-formats both.</p></section>`;
}
