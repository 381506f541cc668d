import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { CATALOGUE, EVENT_TYPES, catalogueEntry, examplePayload, webhookBody } from '../../src/events/catalogue.js';
import { MODULES, buildRegistry } from '../../src/modules/index.js';
import { validateConfig } from '../../src/config.js';
import type { AppContext } from '../../src/context.js';
import { LEGACY_API_VERSION, UNIFIED_API_VERSION, newAccountEventFormat } from '../../src/events/formats.js';
import { AccountsService } from '../../src/accounts/service.js';
import { openDatabase } from '../../src/db/database.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver } from '../helpers/receiver.js';

// Spec 6.1 and 6.2, event by event (the wildcards of 6.2 expanded as docs/events.md lists them).
const SPEC_EVENTS = [
  'intent.succeeded',
  'intent.pending',
  'intent.failed',
  'intent.canceled',
  'intent.paid',
  'subscription.create',
  'subscription.past_due',
  'subscription.pause',
  'subscription.unpause',
  'subscription.reactivate',
  'subscription.update',
  'subscription.item_added',
  'subscription.item_removed',
  'subscription.invoice_item_added',
  'subscription.cancel',
  'setup_intent.succeeded',
  'setup_intent.cancelled',
  'payment_intent.succeeded',
  'payment_intent.failed',
  'bank_transfer_intent.pending',
  'bank_transfer_intent.succeeded',
  'bank_transfer_intent.failed',
  'automated_bank_transfer_intent.succeeded',
  'balance_intent.succeeded',
  'crypto_intent.succeeded',
  'cash_intent.succeeded',
  'refund.create',
  'dispute.create',
  'dispute.update',
  'account_connection.create',
  'partner_commission_invoice.issued',
  'partner_commission_invoice.failed',
  'verification.completed',
  'verification.rejected',
  'tax_invoice_settings.enabled',
  'transfer.sent',
  'transfer.received',
  'transfer.pending',
  'transfer.in_review',
  'transfer.cancelled',
  'withdrawal.create',
  'withdrawal.update',
  'swap.create',
  'swap.update',
  'contract.send',
];

const keys = (o: unknown) => Object.keys(o as object).sort();
// Examples come from the catalogue or from the module that emits the event (`PosdModule.events`);
// what a receiver gets is the payload through `webhookBody`, as for a real event.
const ctx = { registry: buildRegistry(MODULES), config: validateConfig({}) } as unknown as AppContext;
const example = (type: string) =>
  webhookBody(
    { type, payload: examplePayload(type, { accountId: 'ac_x', liveMode: true, createdAt: '2026-03-01T10:00:00.000Z' }, ctx)!, account_id: 'ac_x' },
    { connected: false },
  );

describe('event catalogue', () => {
  it('holds every event of spec 6.1 and 6.2, each with a group and an example carrying its type and api_version', () => {
    for (const type of SPEC_EVENTS) expect(CATALOGUE.has(type), type).toBe(true);
    for (const type of EVENT_TYPES) {
      const entry = catalogueEntry(type)!;
      expect(entry.group).toBe(type.split('.')[0]);
      const body = example(type);
      expect(body.event_type).toBe(type);
      expect(body.api_version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(body.api_version).toBe(entry.apiVersion);
      expect(body.created_at).toBe('2026-03-01T10:00:00.000Z');
    }
    expect(UNIFIED_API_VERSION).not.toBe(LEGACY_API_VERSION);
    expect(catalogueEntry('intent.succeeded')!.apiVersion).toBe(UNIFIED_API_VERSION);
    expect(catalogueEntry('payment_intent.succeeded')!.apiVersion).toBe(LEGACY_API_VERSION);
    expect(catalogueEntry('payment_intent.succeeded')!.replacedBy).toBe('intent.succeeded');
    expect(catalogueEntry('subscription.create')!.replacedBy).toBeNull();
    expect(catalogueEntry('subscription.paused')!.type).toBe('subscription.pause');
  });

  it('takes each example from one place: the module that emits the event, or the catalogue for the rest', () => {
    for (const type of EVENT_TYPES) {
      const fromModule = ctx.registry.events.has(type);
      const fromCatalogue = catalogueEntry(type)!.example !== undefined;
      expect(fromModule !== fromCatalogue, type).toBe(true);
    }
    expect(() => buildRegistry([...MODULES, { name: 'twin', events: { 'refund.create': () => ({}) } }])).toThrow(/both declare/);
    expect(() => buildRegistry([{ name: 'stray', events: { 'no.such': () => ({}) } }])).toThrow(/not in the event catalogue/);
  });

  it('builds the unified intent envelope of 6.1', () => {
    const body = example('intent.succeeded');
    expect(keys(body)).toEqual(
      [
        'type',
        'event_type',
        'status',
        'raw_status',
        'id',
        'legacy_id',
        'receipt_number',
        'api_version',
        'account_id',
        'live_mode',
        'created_at',
        'customer_id',
        'user_id',
        'customer',
        'amount_in_cents',
        'currency',
        'product',
        'tax_invoice_url',
        'checkout',
        'payment',
        'details',
      ].sort(),
    );
    expect(body).toMatchObject({ type: 'payment', status: 'succeeded', event_type: 'intent.succeeded' });
    expect(body.id).toMatch(/^in_/);
    expect(body.legacy_id).toMatch(/^pa_/);
    expect(keys(body.customer)).toEqual(['email', 'full_name', 'id', 'nit', 'phone']);
    // Issue 14: the checkout carries its metadata (every client finds its order through it).
    expect(keys(body.checkout)).toEqual(['id', 'metadata', 'status']);
    expect(keys(body.details)).toEqual(
      [
        'failure_reason',
        'fee',
        'tax_invoicing_fee',
        'vat_withheld',
        'vat_withheld_currency',
        'used_presaved_payment_method',
        'installments',
        'channel',
        'products',
      ].sort(),
    );
    expect(example('intent.paid')).toMatchObject({ type: 'balance', status: 'paid' });
  });

  it('builds the legacy shapes of 6.4 exactly', () => {
    const ok = example('payment_intent.succeeded');
    expect(keys(ok)).toEqual(
      [
        'id',
        'event_type',
        'api_version',
        'checkout',
        'created_at',
        'failure_reason',
        'amount_in_cents',
        'currency',
        'fee',
        'vat_withheld',
        'vat_withheld_currency',
        'customer',
        'product',
        'invoice',
      ].sort(),
    );
    const checkout = ok.checkout as Record<string, any>;
    expect(keys(checkout)).toEqual(['id', 'metadata', 'payment', 'payment_method', 'status', 'transfer_setups']);
    expect(keys(checkout.payment)).toEqual(['id', 'paymentable']);
    expect(keys(checkout.payment.paymentable)).toEqual(['address', 'id', 'phone_number', 'tax_id', 'tax_name', 'type']);
    expect(keys(checkout.payment_method)).toEqual(['card', 'id', 'type']);
    expect(keys(checkout.payment_method.card)).toEqual(['last4', 'network']);
    expect(keys(ok.customer)).toEqual(['email', 'full_name', 'id']);
    expect(keys(ok.product)).toEqual(['id']);
    expect(keys(ok.invoice)).toEqual(['id', 'tax_invoice_url']);

    const failed = example('payment_intent.failed');
    expect(keys(failed)).toEqual(
      [
        'id',
        'event_type',
        'api_version',
        'checkout',
        'created_at',
        'failure_reason',
        'amount_in_cents',
        'currency',
        'fee',
        'vat_withheld',
        'vat_withheld_currency',
        'customer',
        'product',
      ].sort(),
    );
    expect(keys(failed.checkout)).toEqual(['id']);

    const sub = example('subscription.create');
    // Spec 6.4's fields, plus the subscription itself (docs/events.md).
    expect(keys(sub)).toEqual([
      'api_version',
      'created_at',
      'customer_email',
      'customer_id',
      'customer_name',
      'event_type',
      'id',
      'payment',
      'product',
      'subscription',
    ]);
    expect(keys((sub.payment as any).paymentable)).toEqual(['address', 'id', 'phone_number', 'tax_id', 'tax_name', 'type']);
    const product = sub.product as Record<string, any>;
    expect(keys(product)).toEqual([
      'address_requirement',
      'billing_info_requirement',
      'cancel_url',
      'custom_terms_and_conditions',
      'description',
      'has_dynamic_pricing',
      'id',
      'metadata',
      'name',
      'phone_requirement',
      'prices',
      'status',
      'storefront_link',
      'success_url',
    ]);
    expect(keys(product.prices[0])).toEqual([
      'amount_in_cents',
      'billing_interval',
      'billing_interval_count',
      'charge_type',
      'currency',
      'free_trial_interval',
      'free_trial_interval_count',
      'id',
      'periods_before_automatic_cancellation',
    ]);
    expect(example('cash_intent.succeeded').id).toMatch(/^ca_/);
    expect(keys(example('withdrawal.update'))).toContain('transfer');
    expect(keys(example('swap.create'))).toContain('transfer');
  });

  it('marks bodies that reach a platform for a connected child', () => {
    const event = { type: 'verification.completed', payload: { id: 'ver_1' }, account_id: 'ac_child' };
    expect(webhookBody(event, { connected: true })).toEqual({
      id: 'ver_1',
      event_type: 'verification.completed',
      api_version: UNIFIED_API_VERSION,
      connected: true,
      account_id: 'ac_child',
    });
    expect(webhookBody(event, { connected: false })).not.toHaveProperty('connected');
  });
});

describe('which accounts receive which format (spec 6.3)', () => {
  it('decides by creation date and by the platform', () => {
    const since = '2025-01-01T00:00:00.000Z';
    expect(newAccountEventFormat({ createdAt: '2024-12-31T23:59:59.999Z', unifiedSince: since, parentFormat: null })).toBe('both');
    expect(newAccountEventFormat({ createdAt: since, unifiedSince: since, parentFormat: null })).toBe('unified');
    expect(newAccountEventFormat({ createdAt: '2026-01-01T00:00:00.000Z', unifiedSince: since, parentFormat: 'both' })).toBe('both');
    expect(newAccountEventFormat({ createdAt: '2026-01-01T00:00:00.000Z', unifiedSince: since, parentFormat: 'unified' })).toBe('unified');
  });

  it('is written on every account at creation, sandboxes always unified', () => {
    const db = openDatabase(':memory:');
    const accounts = new AccountsService(db, new ManualClock(Date.parse('2026-02-01T00:00:00Z')), { unifiedSince: '2026-01-01T00:00:00Z' });
    const org = accounts.createOrganization('Org');
    const old = accounts.createAccount({ name: 'Old', organizationId: org.id, createdAt: '2025-12-31T00:00:00.000Z' });
    expect(old.account.event_format).toBe('both');
    expect(old.sandbox.event_format).toBe('unified');
    const fresh = accounts.createAccount({ name: 'New', organizationId: org.id });
    expect(fresh.account.event_format).toBe('unified');
    const childOfOld = accounts.createAccount({ name: 'Child', parentId: old.account.id });
    expect(childOfOld.account.event_format).toBe('both');
    expect(childOfOld.sandbox.event_format).toBe('unified');
    expect(accounts.createAccount({ name: 'Child2', parentId: fresh.account.id }).account.event_format).toBe('unified');
    expect(accounts.createAccount({ name: 'Forced', organizationId: org.id, eventFormat: 'both' }).account.event_format).toBe('both');
    db.close();
  });

  it('follows events.unified_since from the configuration', async () => {
    const s = await startTestServer({ config: { events: { unified_since: '2999-01-01' } } });
    try {
      const accounts = new AccountsService(s.daemon.ctx.db, s.daemon.ctx.clock);
      expect(accounts.account(s.installation.account_id)!.event_format).toBe('both');
      expect(accounts.account(s.installation.sandbox_id)!.event_format).toBe('unified');
    } finally {
      await s.stop();
    }
  });
});

describe('test sends of every catalogue event', () => {
  let s: TestServer;
  const r = new Receiver();
  beforeAll(async () => {
    await r.start();
    s = await startTestServer({ config: { webhooks: { allow_cidrs: ['127.0.0.1/32'] } } });
  });
  afterAll(async () => {
    await s.stop();
    await r.stop();
  });

  it('delivers a verifiable example of each type', async () => {
    const { body: ep } = await s.api('POST', '/webhook_endpoints', { body: { url: r.url } });
    const wh = new Webhook(ep.signingSecret);
    for (const type of EVENT_TYPES) {
      const res = await s.api('POST', `/webhook_endpoints/${ep.id}/test`, { body: { event_type: type } });
      expect(res.status, type).toBe(200);
      expect(res.body.status).toBe('succeeded');
      const got = r.received.at(-1)!;
      expect(wh.verify(got.body, got.headers as Record<string, string>)).toMatchObject({ event_type: type });
    }
    expect(r.received).toHaveLength(EVENT_TYPES.length);
  });
});
