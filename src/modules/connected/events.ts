import type { Account } from '../../accounts/service.js';
import type { EventExample, ExampleInput } from '../../events/catalogue.js';
import { newId } from '../../ids.js';
import type { ProfileRow } from './store.js';
import { REQUIRED_DOCUMENTS } from './documents.js';
import { accountConnectionPayload, commissionInvoicePayload, taxInvoiceSettingsPayload, verificationPayload } from './views.js';

/**
 * The test-send payloads of the connected-account events (`PosdModule.events`): an example child of
 * the endpoint's account and its profile, through the builders the emitters call (views.ts).
 */
function exampleChild(i: ExampleInput): Account {
  return {
    id: newId('ac'),
    live_mode: i.liveMode,
    organization_id: newId('org'),
    name: 'Clínica Dental Sonrisa',
    sandbox_of: null,
    parent_account_id: i.accountId,
    tax_id: '12345678',
    tax_name: 'Clínica Dental Sonrisa, S.A.',
    country: 'GT',
    default_currency: 'GTQ',
    currencies: ['GTQ'],
    event_format: 'unified',
    settings: {},
    created_at: i.createdAt,
  };
}

function exampleProfile(i: ExampleInput, child: Account, status: ProfileRow['verification_status']): ProfileRow {
  const rejected = status === 'rejected';
  const documents = Object.fromEntries(REQUIRED_DOCUMENTS.map((t) => [t, { data: {}, submitted_at: i.createdAt }]));
  return {
    account_id: child.id,
    live_mode: i.liveMode ? 1 : 0,
    parent_account_id: i.accountId,
    email: 'admin@sonrisa.example.com',
    verification_status: status,
    documents: JSON.stringify(documents),
    document_errors: JSON.stringify(rejected ? { tax_registration: ['The document is illegible.'] } : {}),
    submitted_at: i.createdAt,
    reviewed_at: i.createdAt,
    verified_at: rejected ? null : i.createdAt,
    commission_override_mode: null,
    commission_enabled_at: null,
    commission_disabled_at: null,
    commission_invoiced_through: null,
    tax_invoicing_status: 'active',
    tax_invoicing_public: JSON.stringify({ provider: 'infile', establishment_code: '1' }),
    tax_invoicing_credentials: '{}',
    tax_invoicing_activated_at: i.createdAt,
    created_at: i.createdAt,
    updated_at: i.createdAt,
  };
}

const commissionInvoice =
  (status: 'issued' | 'failed'): EventExample =>
  (i) => {
    const child = exampleChild(i);
    return commissionInvoicePayload(
      child.id,
      {
        id: newId('pci'),
        account_id: child.id,
        live_mode: i.liveMode ? 1 : 0,
        platform_account_id: i.accountId,
        day: i.createdAt.slice(0, 10),
        currency: 'GTQ',
        commission_in_cents: 4018,
        vat_in_cents: 482,
        total_in_cents: 4500,
        status,
        attempts: 1,
        next_attempt_at: null,
        document_id: status === 'issued' ? 'DTE-0001' : null,
        url: status === 'issued' ? 'https://example.com/dte/1' : null,
        last_error: status === 'failed' ? 'tax_authority_rejected' : null,
        created_at: i.createdAt,
        updated_at: i.createdAt,
      },
      i.createdAt,
    );
  };

export const connectedEventExamples: Record<string, EventExample> = {
  'account_connection.create': (i) => accountConnectionPayload(exampleChild(i), i.createdAt),
  'verification.completed': (i) => {
    const child = exampleChild(i);
    return verificationPayload(child, exampleProfile(i, child, 'verified'), i.createdAt);
  },
  'verification.rejected': (i) => {
    const child = exampleChild(i);
    return verificationPayload(child, exampleProfile(i, child, 'rejected'), i.createdAt);
  },
  'tax_invoice_settings.enabled': (i) => {
    const child = exampleChild(i);
    return taxInvoiceSettingsPayload(child, exampleProfile(i, child, 'verified'), i.createdAt);
  },
  'partner_commission_invoice.issued': commissionInvoice('issued'),
  'partner_commission_invoice.failed': commissionInvoice('failed'),
};
