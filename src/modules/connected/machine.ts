import { setup } from 'xstate';

export type VerificationStatus = 'unverified' | 'incomplete' | 'rejected' | 'verified';
export type VerificationEvent = { type: 'DOCUMENTS_MISSING' } | { type: 'DOCUMENTS_REJECTED' } | { type: 'DOCUMENTS_ACCEPTED' };

/**
 * The one place a connected account's verification moves are written. Every review of a
 * resubmission lands in one of three outcomes from any state (a verified account that sends a bad
 * document is rejected again); `unverified` is only the state before any document.
 */
export const verificationMachine = setup({ types: { events: {} as VerificationEvent } }).createMachine({
  id: 'verification',
  initial: 'unverified',
  on: {
    DOCUMENTS_MISSING: '.incomplete',
    DOCUMENTS_REJECTED: '.rejected',
    DOCUMENTS_ACCEPTED: '.verified',
  },
  states: { unverified: {}, incomplete: {}, rejected: {}, verified: {} },
});

export type TaxInvoicingStatus = 'inactive' | 'active';
export type TaxInvoicingEvent = { type: 'ACTIVATE' } | { type: 'DEACTIVATE' };

/** Electronic invoicing of a connected account: `tax_invoice_settings.enabled` fires on entering `active`. */
export const taxInvoicingMachine = setup({ types: { events: {} as TaxInvoicingEvent } }).createMachine({
  id: 'tax-invoicing',
  initial: 'inactive',
  states: {
    inactive: { on: { ACTIVATE: 'active' } },
    active: { on: { DEACTIVATE: 'inactive', ACTIVATE: 'active' } },
  },
});
