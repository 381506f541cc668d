import { newId } from '../ids.js';
import type { StoredEvent } from '../outbox/events.js';
import type { AppContext } from '../context.js';
import { LEGACY_API_VERSION, UNIFIED_API_VERSION } from './formats.js';
import {
  exampleCustomer,
  examplePaymentable,
  legacyPaymentIntentPayload,
  balanceDetails,
  bankTransferDetails,
  cryptoDetails,
  paymentDetails,
  unifiedIntentPayload,
  type IntentKind,
  type IntentStatus,
} from './payloads.js';

/**
 * The event catalogue: every event of spec 6.1 and 6.2, its model group (what `GET /activities?type=`
 * accepts besides the exact type), its family and `api_version`, and an example payload builder
 * (the test-send endpoint). Families:
 * - `unified`: the `intent.*` events;
 * - `legacy`: per-method events a unified event replaces (sent only to `event_format: both` accounts);
 * - `unchanged`: events the unified change left alone (no replacement; everyone gets them);
 * - `current`: events that came with or after the change.
 * `unified` and `current` carry UNIFIED_API_VERSION; `legacy` and `unchanged` LEGACY_API_VERSION.
 */
export type EventFamily = 'unified' | 'legacy' | 'unchanged' | 'current';

export interface ExampleInput {
  accountId: string;
  liveMode: boolean;
  createdAt: string;
}

export interface CatalogueEntry {
  type: string;
  group: string;
  family: EventFamily;
  apiVersion: string;
  /** The unified event that replaces a legacy one. */
  replacedBy: string | null;
  description: string;
  /**
   * The test-send payload, for the events whose builders live here (the payment events). An event a
   * module emits takes its example from that module instead (`PosdModule.events`), built by the
   * emitter's own builder; `examplePayload` picks.
   */
  example?: (input: ExampleInput) => Record<string, unknown>;
}

/**
 * A test-send payload: what the real emitter would write, from example data. `ctx` is there for
 * builders that read configuration (a contract's checkout URL); examples never read rows.
 */
export type EventExample = (input: ExampleInput, ctx: AppContext) => Record<string, unknown>;

const METHOD_KIND: Record<string, IntentKind> = {
  payment_intent: 'payment',
  bank_transfer_intent: 'bank_transfer',
  crypto_intent: 'crypto',
  balance_intent: 'balance',
  cash_intent: 'cash',
};
const LEGACY_PREFIX: Record<IntentKind, string> = { payment: 'pa', bank_transfer: 'bt', crypto: 'cr', balance: 'ba', cash: 'ca' };

function exampleIntent(kind: IntentKind, status: IntentStatus, i: ExampleInput): Record<string, unknown> {
  const createdAt = i.createdAt;
  const customer = exampleCustomer();
  const failed = status === 'failed';
  const details: Record<string, unknown> =
    kind === 'bank_transfer'
      ? bankTransferDetails({ failure_reason: failed ? 'amount_short' : null, bank_reference: 'BI-000123456', sender_comment: 'Pago factura 1042' })
      : kind === 'payment'
        ? paymentDetails({
            failure_reason: failed ? 'card_declined' : null,
            fee: failed ? 0 : -450,
            vat_withheld: failed ? 0 : -54,
            vat_withheld_currency: 'GTQ',
            installments: null,
            channel: 'terminal',
            products: [{ id: newId('prod'), quantity: 1 }],
          })
        : kind === 'balance'
          ? balanceDetails({
              failure_reason: failed ? 'insufficient_funds' : null,
              // The payer's `intent.paid` carries no fee: the merchant pays it.
              fee: status === 'succeeded' ? -450 : 0,
              vat_withheld: status === 'succeeded' ? -54 : 0,
              vat_withheld_currency: 'GTQ',
              // `intent.paid` goes to the payer: the endpoint's account paid another.
              payer_account_id: status === 'paid' ? i.accountId : newId('ac'),
              merchant_account_id: status === 'paid' ? newId('ac') : i.accountId,
            })
          : kind === 'crypto'
            ? cryptoDetails({
                failure_reason: failed ? 'amount_short' : null,
                network: 'ethereum',
                transaction_hash: status === 'pending' ? null : `0x${'ab'.repeat(32)}`,
                fee: status === 'succeeded' ? -450 : 0,
                vat_withheld: status === 'succeeded' ? -54 : 0,
                vat_withheld_currency: 'GTQ',
              })
            : {};
  return unifiedIntentPayload({
    account_id: i.accountId,
    live_mode: i.liveMode,
    kind,
    status,
    raw_status: kind === 'payment' && status === 'pending' ? 'authorizing' : status,
    id: newId('in'),
    legacy_id: newId(LEGACY_PREFIX[kind]),
    receipt_number: 1042,
    created_at: createdAt,
    customer_id: customer.id,
    user_id: null,
    customer,
    amount_in_cents: 10000,
    currency: 'GTQ',
    product_id: newId('prod'),
    tax_invoice_url: null,
    checkout: { id: newId('ch'), status: status === 'succeeded' || status === 'paid' ? 'paid' : status === 'failed' ? 'failed' : 'unpaid', metadata: {} },
    payment_id: newId('on'),
    details,
  });
}

function exampleLegacyIntent(type: string, createdAt: string): Record<string, unknown> {
  const [method, status] = type.split('.');
  const kind = METHOD_KIND[method] ?? 'payment';
  const succeeded = status === 'succeeded';
  const customer = exampleCustomer();
  return legacyPaymentIntentPayload({
    id: newId(method === 'automated_bank_transfer_intent' ? 'bt' : LEGACY_PREFIX[kind]),
    event_type: type,
    created_at: createdAt,
    checkout: {
      id: newId('ch'),
      status: succeeded ? 'paid' : 'unpaid',
      payment: { id: newId('on'), paymentable: examplePaymentable() },
      payment_method: { id: newId('pay_m'), type: kind === 'payment' ? 'card' : kind, card: kind === 'payment' ? { last4: '4242', network: 'visa' } : null },
      transfer_setups: [],
      metadata: {},
    },
    failure_reason: status === 'failed' ? (kind === 'bank_transfer' ? 'funds_not_received' : 'card_declined') : null,
    amount_in_cents: 10000,
    currency: 'GTQ',
    fee: succeeded && kind !== 'cash' ? -450 : 0,
    vat_withheld: succeeded && kind !== 'cash' ? -54 : 0,
    vat_withheld_currency: 'GTQ',
    customer: { email: customer.email, full_name: customer.full_name, id: customer.id },
    product_id: newId('prod'),
    invoice: { id: null, tax_invoice_url: null },
  });
}

type Example = (i: ExampleInput) => Record<string, unknown>;
const entries: CatalogueEntry[] = [];

function add(type: string, family: EventFamily, description: string, example: Example | undefined, replacedBy: string | null = null): void {
  const apiVersion = family === 'unified' || family === 'current' ? UNIFIED_API_VERSION : LEGACY_API_VERSION;
  entries.push({ type, group: type.split('.')[0], family, apiVersion, replacedBy, description, example });
}

// 6.1 unified payment events
for (const status of ['succeeded', 'pending', 'failed', 'canceled', 'paid'] as const) {
  add(`intent.${status}`, 'unified', `Unified payment event: ${status}`, (i) =>
    // The kind posd emits the status for: a bank transfer waits (pending) or is abandoned (canceled).
    exampleIntent(status === 'paid' ? 'balance' : status === 'pending' || status === 'canceled' ? 'bank_transfer' : 'payment', status, i),
  );
}

// 6.2 legacy per-method events, each replaced by the unified event of the same outcome
const legacyMethods: Record<string, string[]> = {
  payment_intent: ['succeeded', 'pending', 'failed', 'canceled'],
  bank_transfer_intent: ['pending', 'succeeded', 'failed'],
  balance_intent: ['succeeded', 'failed'],
  crypto_intent: ['pending', 'succeeded', 'failed'],
  cash_intent: ['succeeded'],
};
for (const [method, statuses] of Object.entries(legacyMethods)) {
  for (const status of statuses) {
    const type = `${method}.${status}`;
    add(type, 'legacy', `Legacy per-method event (${method})`, (i) => exampleLegacyIntent(type, i.createdAt), `intent.${status}`);
  }
}
add('automated_bank_transfer_intent.succeeded', 'unchanged', 'Automated bank transfer received', (i) =>
  exampleLegacyIntent('automated_bank_transfer_intent.succeeded', i.createdAt),
);

// The events below are emitted by modules, which declare their test-send examples built by the
// emitter's own builder (`PosdModule.events`); an entry here carries an example only while no
// module emits the event. Owners: subscriptions (subscription.*, setup_intent.*), refunds,
// connected accounts (account_connection, partner_commission_invoice, verification,
// tax_invoice_settings), transfers (transfer.*, withdrawal.*), contracts.

// 6.2 subscriptions, setup intents, refunds, disputes: no unified replacement
const unchanged: Array<[string, string]> = [
  ['subscription.create', 'Subscription created'],
  ['subscription.past_due', 'First automatic charge failure'],
  ['subscription.pause', 'Subscription paused'],
  ['subscription.unpause', 'Subscription resumed'],
  ['subscription.reactivate', 'Canceled subscription reactivated'],
  ['subscription.update', 'Subscription information changed'],
  ['subscription.item_added', 'Recurring product added'],
  ['subscription.item_removed', 'Recurring product removed'],
  ['subscription.invoice_item_added', 'One-time charge added to the next invoice'],
  ['subscription.cancel', 'Third automatic charge failure'],
  ['setup_intent.succeeded', 'Trial started or card tokenized without a charge'],
  ['setup_intent.cancelled', 'Card tokenization failed'],
  ['refund.create', 'Refund processed'],
];
for (const [type, description] of unchanged) add(type, 'unchanged', description, undefined);
// Emitted by the disputes module (its examples): a chargeback opened and moved on a card payment.
add('dispute.create', 'unchanged', 'Chargeback opened', undefined);
add('dispute.update', 'unchanged', 'Chargeback status change', undefined);

// 6.2 events of the current format
const current: Array<[string, string]> = [
  ['account_connection.create', 'A child account connects to a platform'],
  ['partner_commission_invoice.issued', 'Daily commission tax invoice'],
  ['partner_commission_invoice.failed', 'Daily commission tax invoice'],
  ['verification.completed', 'Connected account verification accepted'],
  ['verification.rejected', 'Documents rejected'],
  ['tax_invoice_settings.enabled', 'Electronic invoicing activated'],
  ['transfer.sent', 'Peer-to-peer transfer'],
  ['transfer.received', 'Peer-to-peer transfer'],
  ['transfer.pending', 'Transfer in automatic evaluation'],
  ['transfer.in_review', 'Transfer held for human review'],
  ['transfer.cancelled', 'Transfer rejected after review'],
  ['withdrawal.create', 'Bank withdrawal'],
  ['withdrawal.update', 'Bank withdrawal'],
];
for (const [type, description] of current) add(type, 'current', description, undefined);
// Examples in the swaps module (src/modules/swaps/events.ts), built by the emitter's builder.
add('swap.create', 'current', 'Stablecoin swap created', undefined);
add('swap.update', 'current', 'Stablecoin swap status change', undefined);
add('contract.send', 'current', 'A contract is sent', undefined);

export const CATALOGUE: ReadonlyMap<string, CatalogueEntry> = new Map(entries.map((e) => [e.type, e]));
export const EVENT_TYPES: readonly string[] = entries.map((e) => e.type);
/** Older listings name the pause event `subscription.paused` (spec 6.2); we accept it as a name. */
export const EVENT_TYPE_ALIASES: Readonly<Record<string, string>> = { 'subscription.paused': 'subscription.pause' };

export function catalogueEntry(type: string): CatalogueEntry | undefined {
  return CATALOGUE.get(EVENT_TYPE_ALIASES[type] ?? type);
}

/**
 * The test-send payload of an event: the example of the module that emits it (built by its
 * emitter's builder), or the catalogue's own for events built here. Undefined: not in the catalogue.
 */
export function examplePayload(type: string, input: ExampleInput, ctx: AppContext): Record<string, unknown> | undefined {
  const entry = catalogueEntry(type);
  if (!entry) return undefined;
  const declared = ctx.registry.events.get(entry.type);
  if (declared) return declared(input, ctx);
  if (!entry.example) throw new Error(`no module declares the example of ${entry.type} and the catalogue has none`);
  return entry.example(input);
}

/** Model groups, for `GET /activities?type=<group>`. */
export const EVENT_GROUPS: readonly string[] = [...new Set(entries.map((e) => e.group))];

/** `api_version` of an event type; types outside the catalogue are new, hence the unified date. */
export function apiVersionOf(type: string): string {
  return catalogueEntry(type)?.apiVersion ?? UNIFIED_API_VERSION;
}

/**
 * The JSON body delivered for a stored event: its payload, with `event_type` and `api_version`
 * filled when the emitter left them out, and, when it reaches a platform's endpoint for a connected
 * child, `connected: true` and the child's `account_id` (spec 6.2).
 */
export function webhookBody(event: Pick<StoredEvent, 'type' | 'payload' | 'account_id'>, opts: { connected: boolean }): Record<string, unknown> {
  const body: Record<string, unknown> = { ...event.payload };
  if (body.event_type === undefined) body.event_type = event.type;
  if (body.api_version === undefined) body.api_version = apiVersionOf(event.type);
  if (opts.connected) {
    body.connected = true;
    body.account_id = event.account_id;
  }
  return body;
}
