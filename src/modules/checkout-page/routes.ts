import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { ApiApp } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import { cookie, parseCookies, parseForms, sameToken, seeOther, sendHtml } from '../../api/html.js';
import { groupCommit } from '../../db/group-commit.js';
import { accountsOf, type Account } from '../../accounts/service.js';
import { ApiError } from '../../errors.js';
import { checkoutForPage, createCheckout, isExpired, type Checkout } from '../checkouts/service.js';
import { productForPage } from '../products/service.js';
import { abandonInSandbox, holdInSandbox, payInSandbox, paymentIntentRow } from '../payments/service.js';
import { CSS, checkoutPage, missingPage, stalePage, storefrontPage, type PageAction } from './page.js';
import { EMBED_SCRIPT, embedElement, embedMessageFor, embedPolicy } from './embed.js';

/** Double-submit token of the page's forms (docs/compatibility.md, "The checkout page"). */
const FORM_COOKIE = 'posd_checkout';
/** The same for the product page's buy form. */
const STORE_COOKIE = 'posd_storefront';

type Outcome = 'success' | 'cancel' | 'page';

/**
 * What each button of the sandbox page does: the states it is offered in, the sandbox processor
 * call it makes (the same functions behind `POST /test_helpers/checkouts/{id}/...`) and where the
 * buyer goes next: the checkout's success_url or cancel_url, or back to this page.
 */
const ACTIONS: Record<
  string,
  PageAction & { from: string[]; method?: 'card' | 'bank_transfer'; run: (ctx: AppContext, account: Account, id: string) => unknown; next: Outcome }
> = {
  pay: {
    action: 'pay',
    method: 'card',
    label: 'Pay (card approved)',
    primary: true,
    from: ['unpaid'],
    run: (ctx, a, id) => payInSandbox(ctx, a, id, { method: 'card', outcome: 'succeeded' }),
    next: 'success',
  },
  decline: {
    action: 'decline',
    method: 'card',
    label: 'Pay (card declined)',
    from: ['unpaid'],
    run: (ctx, a, id) => payInSandbox(ctx, a, id, { method: 'card', outcome: 'failed', failureReason: 'card_declined' }),
    next: 'cancel',
  },
  payer_authentication: {
    action: 'payer_authentication',
    method: 'card',
    label: 'Pay with a card that asks for authentication',
    from: ['unpaid'],
    run: (ctx, a, id) => holdInSandbox(ctx, a, id, 'card'),
    next: 'page',
  },
  bank_transfer: {
    action: 'bank_transfer',
    method: 'bank_transfer',
    label: 'Pay by bank transfer (arrives later)',
    from: ['unpaid'],
    run: (ctx, a, id) => holdInSandbox(ctx, a, id, 'bank_transfer'),
    next: 'success',
  },
  authenticate: {
    action: 'authenticate',
    method: 'card',
    label: 'Confirm the payment (authentication passes)',
    primary: true,
    from: ['needs_payer_authentication'],
    run: (ctx, a, id) => payInSandbox(ctx, a, id, { method: 'card', outcome: 'succeeded' }),
    next: 'success',
  },
  fail_authentication: {
    action: 'fail_authentication',
    method: 'card',
    label: 'Authentication fails',
    from: ['needs_payer_authentication'],
    run: (ctx, a, id) => payInSandbox(ctx, a, id, { method: 'card', outcome: 'failed', failureReason: 'payer_authentication_failed' }),
    next: 'cancel',
  },
  transfer_arrives: {
    action: 'transfer_arrives',
    method: 'bank_transfer',
    label: 'The transfer arrives',
    primary: true,
    from: ['payment_in_progress'],
    run: (ctx, a, id) => payInSandbox(ctx, a, id, { method: 'bank_transfer', outcome: 'succeeded' }),
    next: 'success',
  },
  transfer_fails: {
    action: 'transfer_fails',
    method: 'bank_transfer',
    label: 'The transfer never arrives',
    from: ['payment_in_progress'],
    run: (ctx, a, id) => payInSandbox(ctx, a, id, { method: 'bank_transfer', outcome: 'failed', failureReason: 'funds_not_received' }),
    next: 'cancel',
  },
  cancel: {
    action: 'cancel',
    label: 'Cancel and return to the shop',
    from: ['unpaid', 'needs_payer_authentication'],
    // Leaving an authentication challenge abandons it; an unpaid checkout stays unpaid, as the
    // hosted service leaves it, so the buyer may come back to it.
    run: (ctx, a, id) => (checkoutForPage(ctx, id)?.status === 'needs_payer_authentication' ? abandonInSandbox(ctx, a, id) : undefined),
    next: 'cancel',
  },
};

/**
 * The buttons a checkout offers now: those of its state, and, to start a payment, only the methods
 * every line allows (`items[].payment_method_types`; a line without the field allows any).
 */
function offered(checkout: Checkout): Array<(typeof ACTIONS)[string]> {
  const allows = (method: string) => checkout.items.every((l) => !l.payment_method_types || l.payment_method_types.includes(method as never));
  return Object.values(ACTIONS).filter((a) => a.from.includes(checkout.status) && (!a.method || checkout.status !== 'unpaid' || allows(a.method)));
}

const Params = Type.Object({ id: Type.String({ pattern: '^[a-z]+_[0-9A-Za-z]{1,64}$' }) });
const ActionParams = Type.Object({ id: Params.properties.id, action: Type.String({ maxLength: 40 }) });
const FormBody = Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: true });
/** `embed=true`, as the hosted library appends it; any other query parameter is ignored, as before. */
const PageQuery = Type.Object({ embed: Type.Optional(Type.String({ maxLength: 10 })) }, { additionalProperties: true });
const embedded = (query: { embed?: string }) => query.embed === 'true';

const isWebUrl = (u: string | null): u is string => !!u && /^https?:\/\//i.test(u);
const originOf = (u: string | null) => {
  try {
    return isWebUrl(u) ? new URL(u).origin : undefined;
  } catch {
    return undefined;
  }
};

/**
 * The buyer's checkout page, `/checkout-session/{id}` as the hosted service has it (`checkout_url`),
 * and `/pay/{id}` (the older `url`). A sandbox checkout gets a test payment page; a live one a
 * summary of what is owed and its state, since card payments happen at the terminal.
 */
export async function checkoutPageRoutes(app: ApiApp, ctx: AppContext): Promise<void> {
  await app.register(async (plain) => {
    const scope = plain.withTypeProvider<TypeBoxTypeProvider>();
    parseForms(scope);

    const load = (id: string): { checkout: Checkout; account: Account } | undefined => {
      const checkout = checkoutForPage(ctx, id);
      const account = checkout && accountsOf(ctx).account(checkout.account_id);
      return checkout && account ? { checkout, account } : undefined;
    };

    const render = (
      req: FastifyRequest,
      reply: FastifyReply,
      found: { checkout: Checkout; account: Account },
      status: number,
      opts: { notice?: string; embed?: boolean } = {},
    ) => {
      const { checkout, account } = found;
      const sandbox = !account.live_mode;
      const expired = isExpired(ctx, checkout);
      const actions = sandbox && !expired ? offered(checkout) : [];
      // Framed only with embed=true and by the origins the account allows (none: as without it).
      const policy = opts.embed ? embedPolicy(account) : undefined;
      const framed = !!policy && policy.frameAncestors.length > 0;
      let csrf = parseCookies(req.headers.cookie)[FORM_COOKIE] ?? '';
      if (actions.length && !/^[\w-]{43}$/.test(csrf)) {
        csrf = randomBytes(32).toString('base64url');
        reply.header('set-cookie', cookie(ctx, FORM_COOKIE, csrf, 24 * 3600, `/checkout-session/${checkout.id}`, { framed }));
      }
      const pa = checkout.payment_intent_id ? paymentIntentRow(ctx, [account.id], account.live_mode, checkout.payment_intent_id) : undefined;
      const failureReason = pa?.failure_reason ?? null;
      const html = checkoutPage({
        checkout,
        merchant: account.name,
        sandbox,
        expired,
        actions,
        csrf,
        failureReason,
        notice: opts.notice,
        embed: framed ? embedElement(embedMessageFor(checkout, failureReason), policy.targets) : undefined,
      });
      // The page's id is its capability: it is never sent on to the shop or anyone else.
      const formTargets = [originOf(checkout.success_url), originOf(checkout.cancel_url)].filter((o): o is string => !!o);
      return sendHtml(reply, status, html, { formTargets, referrer: 'no-referrer', frameAncestors: framed ? policy.frameAncestors : undefined });
    };

    scope.get('/checkout-session.css', { schema: { hide: true } }, async (_req, reply) =>
      reply.header('content-type', 'text/css; charset=utf-8').header('cache-control', 'max-age=300').send(CSS),
    );

    scope.get('/checkout-session/embed.js', { schema: { hide: true } }, async (_req, reply) =>
      reply
        .header('content-type', 'text/javascript; charset=utf-8')
        .header('cache-control', 'max-age=300')
        .header('x-content-type-options', 'nosniff')
        .send(EMBED_SCRIPT),
    );

    scope.get('/checkout-session/:id', { schema: { hide: true, params: Params, querystring: PageQuery } }, async (req, reply) => {
      const found = load(req.params.id);
      if (!found) return sendHtml(reply, 404, missingPage(), { referrer: 'no-referrer' });
      return render(req, reply, found, 200, { embed: embedded(req.query) });
    });

    // The public product page of `storefront_link` (hosted section 4): GET shows the product, the
    // form opens a checkout of it (CSRF-checked like the checkout page's forms) and sends the buyer to
    // its checkout page, sandbox or live as the product's account is.
    const storefront = (req: FastifyRequest, reply: FastifyReply, id: string, status: number, notice?: string) => {
      const product = productForPage(ctx, id);
      const account = product && accountsOf(ctx).account(product.account_id);
      if (!product || !account) return sendHtml(reply, 404, missingPage(), { referrer: 'no-referrer' });
      const unavailable =
        product.status === 'sold_out'
          ? 'Sold out.'
          : product.status !== 'active'
            ? 'This product is no longer sold.'
            : product.prices.length === 0
              ? 'This product has no price yet.'
              : null;
      let csrf = parseCookies(req.headers.cookie)[STORE_COOKIE] ?? '';
      if (!unavailable && !/^[\w-]{43}$/.test(csrf)) {
        csrf = randomBytes(32).toString('base64url');
        reply.header('set-cookie', cookie(ctx, STORE_COOKIE, csrf, 24 * 3600, `/storefront/${product.id}`));
      }
      return sendHtml(reply, status, storefrontPage({ product, merchant: account.name, sandbox: !account.live_mode, unavailable, csrf, notice }), {
        referrer: 'no-referrer',
      });
    };

    scope.get('/storefront/:id', { schema: { hide: true, params: Params } }, async (req, reply) => storefront(req, reply, req.params.id, 200));

    scope.post('/storefront/:id', { schema: { hide: true, params: Params, body: FormBody } }, async (req, reply) => {
      const product = productForPage(ctx, req.params.id);
      const account = product && accountsOf(ctx).account(product.account_id);
      if (!product || !account) return sendHtml(reply, 404, missingPage(), { referrer: 'no-referrer' });
      if (!sameToken(req.body._csrf, parseCookies(req.headers.cookie)[STORE_COOKIE])) return seeOther(reply, `/storefront/${product.id}`);
      let made: Checkout;
      try {
        made = await groupCommit(ctx.db, () =>
          createCheckout(ctx, account, { items: [{ product_id: product.id }], success_url: product.success_url, cancel_url: product.cancel_url }),
        );
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return storefront(req, reply, product.id, err.status, err.message);
      }
      ctx.log.info({ product_id: product.id, checkout_id: made.id }, 'storefront checkout opened');
      return seeOther(reply, `/checkout-session/${made.id}`);
    });

    // `url`, the name posd answered before `checkout_url`: the same page.
    scope.get('/pay/:id', { schema: { hide: true, params: Params } }, async (req, reply) =>
      reply.code(308).header('location', `/checkout-session/${req.params.id}`).send(''),
    );

    scope.post(
      '/checkout-session/:id/:action',
      { schema: { hide: true, params: ActionParams, body: FormBody, querystring: PageQuery } },
      async (req, reply) => {
        const found = load(req.params.id);
        if (!found) return sendHtml(reply, 404, missingPage(), { referrer: 'no-referrer' });
        const { checkout, account } = found;
        const action = Object.hasOwn(ACTIONS, req.params.action) ? ACTIONS[req.params.action] : undefined;
        // A live checkout's page has no buttons: it takes no payment.
        if (!action || account.live_mode) return sendHtml(reply, 404, missingPage(), { referrer: 'no-referrer' });
        if (!sameToken(req.body._csrf, parseCookies(req.headers.cookie)[FORM_COOKIE])) {
          return sendHtml(reply, 403, stalePage(checkout.id), { referrer: 'no-referrer' });
        }
        const embed = embedded(req.query);
        const page = `/checkout-session/${checkout.id}${embed ? '?embed=true' : ''}`;
        // A button from an older view of the page (a second click, another tab): show where it is now.
        if (!offered(checkout).includes(action)) return seeOther(reply, page);
        try {
          await groupCommit(ctx.db, () => action.run(ctx, account, checkout.id));
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          return render(req, reply, load(checkout.id)!, err.status, { notice: err.message, embed });
        }
        ctx.log.info({ checkout_id: checkout.id, action: action.action, embed }, 'sandbox checkout page action');
        // Embedded, the frame stays on the page, which tells the shop the outcome (its callbacks then
        // decide where the buyer goes); otherwise the buyer goes to the shop's URL for the outcome.
        const target = embed ? null : action.next === 'success' ? checkout.success_url : action.next === 'cancel' ? checkout.cancel_url : null;
        return seeOther(reply, isWebUrl(target) ? target : page);
      },
    );
  });
}
