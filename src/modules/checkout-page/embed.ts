import { esc } from '../../api/html.js';
import { embedOriginsOf } from '../../accounts/embed-origins.js';
import type { Account } from '../../accounts/service.js';
import type { Checkout } from '../checkouts/schema.js';

/**
 * The embedded checkout (hosted-api.md section 16b; docs/compatibility.md "The embedded checkout"):
 * the hosted library frames `checkout_url?embed=true` and waits for the page to post it
 * `{event, type, message}` objects. posd's page does so from one small script it serves itself
 * (`/checkout-session/embed.js`, CSP `script-src 'self'`), reading the message from the page.
 */

export type EmbedEvent = 'recurrente-plugin:payment-success' | 'recurrente-plugin:payment-failed' | 'recurrente-plugin:payment-in-progress';

export interface EmbedMessage {
  event: EmbedEvent;
  /** `success`; for a failure `notice` (the payer's bank or card said no) or `error` (anything else); `notice` while in progress. */
  type: 'success' | 'notice' | 'error';
  message: string;
}

/** Failures the payer can act on (another card, another try): the library's `notice` type. */
const PAYER_FAILURES = new Set(['card_declined', 'insufficient_funds', 'payer_authentication_failed', 'funds_not_received', 'expired_card']);

/**
 * What the page tells its parent in this state, or nothing. The message follows the checkout's
 * state, not the button pressed: a shop that frames an already paid checkout hears `payment-success`
 * again, which its `onSuccess` must take as the same order (hosted webhooks repeat too).
 */
export function embedMessageFor(checkout: Pick<Checkout, 'status'>, failureReason: string | null): EmbedMessage | null {
  if (checkout.status === 'paid') return { event: 'recurrente-plugin:payment-success', type: 'success', message: 'Payment succeeded.' };
  if (checkout.status === 'failed') {
    const reason = failureReason ?? 'declined';
    return {
      event: 'recurrente-plugin:payment-failed',
      type: PAYER_FAILURES.has(reason) ? 'notice' : 'error',
      message: `The payment failed (${reason}). Nothing was charged.`,
    };
  }
  if (checkout.status === 'payment_in_progress') {
    return { event: 'recurrente-plugin:payment-in-progress', type: 'notice', message: 'The payment is in progress; the shop hears when it settles.' };
  }
  return null;
}

/**
 * Who may frame the page and whom its messages go to. A live account names its shops
 * (`embed_origins`): the page is framed by them only and posts to them only, never to `*`. A
 * sandbox's page is framed by any origin and posts to its parent's origin as the browser reports it
 * (`location.ancestorOrigins`), or to `*` where the browser does not (a sandbox moves no money).
 */
export function embedPolicy(account: Pick<Account, 'live_mode' | 'settings'>): { frameAncestors: string[]; targets: string[] | '*' } {
  const allowed = embedOriginsOf(account);
  if (allowed.any) return { frameAncestors: ['*'], targets: '*' };
  // No shop named: nobody frames it (sendHtml's DENY), as without embed=true.
  return { frameAncestors: allowed.origins, targets: allowed.origins };
}

/** The element the script reads: the message and its targets, as data attributes (no inline script). */
export function embedElement(message: EmbedMessage | null, targets: string[] | '*'): string {
  if (!message) return '';
  return (
    `<div id="embed-message" hidden data-event="${esc(message.event)}" data-type="${esc(message.type)}" data-message="${esc(message.message)}"` +
    ` data-targets="${esc(targets === '*' ? '*' : targets.join(' '))}"></div><script src="/checkout-session/embed.js"></script>`
  );
}

/**
 * Posts the page's message to its parent. With a list, only to the listed origin that is the parent
 * (or, where the browser does not report the parent, to each listed origin: postMessage drops a
 * message whose target origin is not the receiver's, so no other site reads it).
 */
export const EMBED_SCRIPT = `(function () {
  var el = document.getElementById('embed-message');
  if (!el || window.parent === window) return;
  var msg = { event: el.dataset.event, type: el.dataset.type, message: el.dataset.message };
  var ancestors = window.location.ancestorOrigins;
  var parent = ancestors && ancestors.length ? ancestors[0] : null;
  var targets = el.dataset.targets === '*' ? [parent || '*'] : el.dataset.targets.split(' ').filter(function (o) { return o && (!parent || o === parent); });
  for (var i = 0; i < targets.length; i++) window.parent.postMessage(msg, targets[i]);
})();
`;
