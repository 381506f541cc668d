import type { Account } from '../../accounts/service.js';
import { accountView } from '../../accounts/view.js';
import { REQUIRED_DOCUMENTS, type DocumentType } from './documents.js';
import type { CommissionInvoiceRow, ProfileRow } from './store.js';
import type { TaxInvoicing, Verification } from './schema.js';

/**
 * What the connected-accounts API shows and what its events carry, as pure functions of rows: the
 * emitters (service.ts, invoicer.ts) and the test-send examples (events.ts) call the same ones.
 */

type StoredDocs = Partial<Record<DocumentType, { data: unknown; submitted_at: string }>>;

export function verificationView(p: ProfileRow): Verification {
  const docs = JSON.parse(p.documents) as StoredDocs;
  const errors = JSON.parse(p.document_errors) as Record<string, string[]>;
  const documents: Verification['documents'] = {};
  for (const [type, d] of Object.entries(docs)) {
    documents[type] = { status: errors[type]?.length ? 'rejected' : 'accepted', submitted_at: d!.submitted_at, errors: errors[type] ?? [] };
  }
  return {
    status: p.verification_status,
    requirements: REQUIRED_DOCUMENTS.filter((t) => !docs[t]),
    document_errors: errors,
    documents,
    reviewed_at: p.reviewed_at,
    verified_at: p.verified_at,
  };
}

export function taxInvoicingView(child: Account, p: ProfileRow): TaxInvoicing {
  const pub = JSON.parse(p.tax_invoicing_public) as { provider?: string; establishment_code?: string };
  return {
    account_id: child.id,
    enabled: p.tax_invoicing_status === 'active',
    status: p.tax_invoicing_status,
    provider: pub.provider ?? null,
    establishment_code: pub.establishment_code ?? null,
    tax_id: child.tax_id,
    activated_at: p.tax_invoicing_activated_at,
  };
}

export function invoiceView(r: CommissionInvoiceRow) {
  return {
    id: r.id,
    account_id: r.account_id,
    day: r.day,
    currency: r.currency,
    commission_in_cents: r.commission_in_cents,
    vat_in_cents: r.vat_in_cents,
    total_in_cents: r.total_in_cents,
    status: r.status,
    attempts: r.attempts,
    document_id: r.document_id,
    url: r.url,
    last_error: r.last_error,
    created_at: r.created_at,
  };
}

/** An event about a child, as its platform receives it (spec 6.2: `connected: true` and the child's `account_id`). */
function aboutChild(childId: string, body: Record<string, unknown>, at: string): Record<string, unknown> {
  return { ...body, account_id: childId, connected: true, created_at: at };
}

export const accountConnectionPayload = (child: Account, at: string) => aboutChild(child.id, { account: accountView(child) }, at);

/** `verification.rejected` / `.completed`: the new status and the whole verification; a rejection names its errors. */
export function verificationPayload(child: Account, p: ProfileRow, at: string): Record<string, unknown> {
  const verification = verificationView(p);
  const status = p.verification_status;
  if (status === 'rejected') return aboutChild(child.id, { status, document_errors: verification.document_errors, verification }, at);
  return aboutChild(child.id, { status, verification }, at);
}

export const taxInvoiceSettingsPayload = (child: Account, p: ProfileRow, at: string) => aboutChild(child.id, { tax_invoicing: taxInvoicingView(child, p) }, at);

export const commissionInvoicePayload = (childId: string, invoice: CommissionInvoiceRow, at: string) =>
  aboutChild(childId, { invoice: invoiceView(invoice) }, at);
