import { setup } from 'xstate';

export type CheckoutStatus =
  | 'unpaid'
  | 'payment_in_progress'
  | 'paid'
  | 'failed'
  | 'needs_verification'
  | 'no_payment_required'
  | 'verification_failed'
  | 'needs_payer_authentication';

export type CheckoutEvent =
  | { type: 'START_PAYMENT' }
  | { type: 'ABANDON_PAYMENT' }
  | { type: 'REQUIRE_VERIFICATION' }
  | { type: 'REQUIRE_PAYER_AUTHENTICATION' }
  | { type: 'VERIFICATION_FAILED' }
  | { type: 'PAYMENT_SUCCEEDED' }
  | { type: 'PAYMENT_FAILED' };

/**
 * The one place checkout transitions are written. Only an unpaid checkout may be edited; a paid or
 * failed checkout is settled for good (a payment attempt that fails ends its checkout: the
 * point-of-sale program makes a new checkout to try again, so one checkout never holds two
 * outcomes). The intermediate states of spec 3.6 come from processors (3-D Secure, verification).
 */
export const checkoutMachine = setup({
  types: { events: {} as CheckoutEvent },
}).createMachine({
  id: 'checkout',
  initial: 'unpaid',
  states: {
    unpaid: {
      on: {
        START_PAYMENT: 'payment_in_progress',
        REQUIRE_VERIFICATION: 'needs_verification',
        REQUIRE_PAYER_AUTHENTICATION: 'needs_payer_authentication',
        PAYMENT_SUCCEEDED: 'paid',
        PAYMENT_FAILED: 'failed',
      },
    },
    payment_in_progress: {
      on: {
        ABANDON_PAYMENT: 'unpaid',
        REQUIRE_PAYER_AUTHENTICATION: 'needs_payer_authentication',
        PAYMENT_SUCCEEDED: 'paid',
        PAYMENT_FAILED: 'failed',
      },
    },
    needs_verification: {
      on: { PAYMENT_SUCCEEDED: 'paid', PAYMENT_FAILED: 'failed', VERIFICATION_FAILED: 'verification_failed' },
    },
    needs_payer_authentication: {
      on: { PAYMENT_SUCCEEDED: 'paid', PAYMENT_FAILED: 'failed', ABANDON_PAYMENT: 'unpaid' },
    },
    verification_failed: { type: 'final' },
    no_payment_required: { type: 'final' },
    paid: { type: 'final' },
    failed: { type: 'final' },
  },
});

export const EDITABLE_STATUSES: readonly CheckoutStatus[] = ['unpaid'];
