import { esc } from '../../api/html.js';
import type { Checkout } from '../checkouts/schema.js';
import type { Product } from '../products/schema.js';

/**
 * Plain server-rendered HTML: no CDN, one small stylesheet, readable on a phone; no scripts, but for
 * the embedded checkout's one file that tells the framing shop the outcome (embed.ts).
 */
export const CSS = `
*{box-sizing:border-box}body{margin:0;font:16px/1.45 system-ui,sans-serif;color:#1d2327;background:#f4f5f7}
main{max-width:460px;margin:0 auto;padding:1rem}.card{background:#fff;border-radius:10px;padding:1rem 1.2rem;box-shadow:0 1px 3px #0002;margin-bottom:1rem}
h1{font-size:1.15rem;margin:0 0 .2rem}h2{font-size:1rem;margin:0 0 .5rem}.muted{color:#687076}
.sandbox{background:#fff4ce;border:1px solid #e0c35a;border-radius:6px;padding:.4rem .7rem;font-size:.9rem;margin-bottom:1rem}
table{border-collapse:collapse;width:100%}td{padding:.3rem 0;border-bottom:1px solid #eee;vertical-align:top}td.n{text-align:right;white-space:nowrap}
tr.total td{font-weight:700;border-bottom:0;padding-top:.5rem}.state{font-weight:600}.ok{color:#18794e}.bad{color:#c62828}
form{margin:.5rem 0}button{width:100%;font:inherit;padding:.65rem;border-radius:8px;border:1px solid #888;background:#fff;cursor:pointer}
button.primary{background:#1d2327;color:#fff;border-color:#1d2327}a.back{display:inline-block;margin-top:.5rem}
.notice{background:#fdecea;border-radius:6px;padding:.5rem .7rem}
`;

/** One button of the sandbox page: the action posted and its label. */
export interface PageAction {
  action: string;
  label: string;
  primary?: boolean;
}

export interface CheckoutPageView {
  checkout: Checkout;
  merchant: string;
  sandbox: boolean;
  expired: boolean;
  /** Buttons shown (sandbox only), posted with `csrf`. */
  actions: PageAction[];
  csrf: string;
  failureReason: string | null;
  notice?: string;
  /** Embedded in a shop's page (embed=true): the message element and script (embed.ts); no way back to the shop. */
  embed?: string;
}

const money = (cents: number, currency: string) => `${esc(currency)} ${(cents / 100).toFixed(2)}`;

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><link rel="stylesheet" href="/checkout-session.css"></head><body><main>${body}</main></body></html>`;
}

/** What the buyer reads about the checkout's state, and whether it is good news. */
function stateLine(v: CheckoutPageView): { text: string; cls: string } {
  const { checkout } = v;
  if (checkout.status === 'paid') return { text: 'Paid. Thank you.', cls: 'ok' };
  if (checkout.status === 'failed') return { text: `The payment failed${v.failureReason ? ` (${v.failureReason})` : ''}. Nothing was charged.`, cls: 'bad' };
  if (v.expired) return { text: 'This checkout has expired and can no longer be paid.', cls: 'bad' };
  if (checkout.status === 'needs_payer_authentication') return { text: 'Your bank asks you to confirm this payment.', cls: '' };
  if (checkout.status === 'payment_in_progress') {
    return { text: v.sandbox ? 'Waiting for the bank transfer to arrive.' : 'A payment is in progress at the terminal.', cls: '' };
  }
  if (checkout.status === 'unpaid') return { text: v.sandbox ? 'Waiting for payment.' : 'Waiting for payment at the counter.', cls: '' };
  return { text: checkout.status.replaceAll('_', ' '), cls: '' };
}

function lines(checkout: Checkout): string {
  const rows = checkout.items.map(
    (i) =>
      `<tr><td>${esc(i.name)}${i.quantity > 1 ? ` <span class="muted">× ${i.quantity}</span>` : ''}</td><td class="n">${money(i.amount_in_cents * i.quantity, checkout.currency)}</td></tr>`,
  );
  if (checkout.discount) {
    rows.push(`<tr><td>Subtotal</td><td class="n">${money(checkout.subtotal_in_cents, checkout.currency)}</td></tr>`);
    rows.push(`<tr><td>Discount</td><td class="n">−${money(checkout.discount.amount_in_cents, checkout.currency)}</td></tr>`);
  }
  rows.push(`<tr class="total"><td>Total</td><td class="n" id="total">${money(checkout.total_in_cents, checkout.currency)}</td></tr>`);
  return `<table>${rows.join('')}</table>`;
}

export function checkoutPage(v: CheckoutPageView): string {
  const { checkout } = v;
  const state = stateLine(v);
  const forms = v.actions
    .map(
      (a) =>
        `<form method="post" action="/checkout-session/${esc(checkout.id)}/${esc(a.action)}${v.embed !== undefined ? '?embed=true' : ''}"><input type="hidden" name="_csrf" value="${esc(v.csrf)}">` +
        `<button type="submit" id="${esc(a.action)}"${a.primary ? ' class="primary"' : ''}>${esc(a.label)}</button></form>`,
    )
    .join('');
  const settled = checkout.status === 'paid' || checkout.status === 'failed' || v.expired;
  // Back to the shop: where a settled checkout would have sent the buyer, or where they came from.
  const back = checkout.status === 'paid' ? checkout.success_url : checkout.cancel_url;
  // Embedded, the shop's own page is around the frame: its callbacks move the buyer on.
  const backLink =
    v.embed === undefined && back && /^https?:\/\//i.test(back) && (settled || !v.sandbox)
      ? `<a class="back" id="back" href="${esc(back)}">Back to the shop</a>`
      : '';
  const live = v.sandbox
    ? ''
    : settled
      ? ''
      : '<p id="live-note">Card payments are taken at the counter, on the store\'s card terminal. This page takes no card details.</p>';
  return layout(
    `Pay ${v.merchant}`,
    `${v.sandbox ? '<p class="sandbox" id="sandbox">Sandbox: test payments only, no money moves.</p>' : ''}
<section class="card"><h1>${esc(v.merchant)}</h1><p class="muted">Checkout ${esc(checkout.id)}</p>${lines(checkout)}</section>
<section class="card"><h2>Status</h2>
${v.notice ? `<p class="notice" role="alert">${esc(v.notice)}</p>` : ''}
<p class="state ${state.cls}" id="state" data-status="${esc(v.expired && checkout.status === 'unpaid' ? 'expired' : checkout.status)}">${esc(state.text)}</p>
${live}${forms}${backLink}</section>${v.embed ?? ''}`,
  );
}

export interface StorefrontView {
  product: Product;
  merchant: string;
  sandbox: boolean;
  /** Why it cannot be bought now (sold out, archived, no price); null: the buy button shows. */
  unavailable: string | null;
  csrf: string;
  notice?: string;
}

/**
 * The public product page (`storefront_link`): the product, its price, and one button that opens a
 * checkout of it and sends the buyer to that checkout's page. No buyer data is taken here.
 */
export function storefrontPage(v: StorefrontView): string {
  const { product } = v;
  const price = product.prices.find((p) => p.charge_type === 'one_time') ?? product.prices[0];
  const every =
    price?.charge_type === 'recurring'
      ? ` every ${price.billing_interval_count && price.billing_interval_count > 1 ? `${price.billing_interval_count} ` : ''}${esc(price.billing_interval ?? '')}`
      : '';
  const buy = v.unavailable
    ? `<p class="state bad" id="state" data-status="unavailable">${esc(v.unavailable)}</p>`
    : `<form method="post" action="/storefront/${esc(product.id)}"><input type="hidden" name="_csrf" value="${esc(v.csrf)}">` +
      `<button type="submit" id="buy" class="primary">Buy</button></form>`;
  return layout(
    `${product.name} · ${v.merchant}`,
    `${v.sandbox ? '<p class="sandbox" id="sandbox">Sandbox: test payments only, no money moves.</p>' : ''}
<section class="card"><h1 id="product-name">${esc(product.name)}</h1><p class="muted">${esc(v.merchant)}</p>
${product.description ? `<p>${esc(product.description)}</p>` : ''}
${price ? `<table><tr class="total"><td>Price</td><td class="n" id="price">${money(price.amount_in_cents, price.currency)}${every}</td></tr></table>` : ''}</section>
<section class="card">${v.notice ? `<p class="notice" role="alert">${esc(v.notice)}</p>` : ''}${buy}</section>`,
  );
}

export function missingPage(): string {
  return layout(
    'Checkout not found',
    '<section class="card"><h1>Checkout not found</h1><p>This payment link is not valid. Ask the shop for a new one.</p></section>',
  );
}

export function stalePage(id: string): string {
  return layout(
    'Page expired',
    `<section class="card"><h1>This page expired</h1><p>Nothing was charged. <a href="/checkout-session/${esc(id)}">Open the checkout again</a>.</p></section>`,
  );
}
