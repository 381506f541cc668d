import { setup } from 'xstate';

export type ContractStatus = 'sent' | 'viewed' | 'signed' | 'declined' | 'expired';
export type ContractEvent = { type: 'VIEW' } | { type: 'SIGN' } | { type: 'DECLINE' } | { type: 'EXPIRE' };

/** Spec 3.2, the one place contract transitions are written. Signed, declined and expired are final. */
export const contractMachine = setup({ types: { events: {} as ContractEvent } }).createMachine({
  id: 'contract',
  initial: 'sent',
  states: {
    sent: { on: { VIEW: 'viewed', SIGN: 'signed', DECLINE: 'declined', EXPIRE: 'expired' } },
    viewed: { on: { SIGN: 'signed', DECLINE: 'declined', EXPIRE: 'expired' } },
    signed: { type: 'final' },
    declined: { type: 'final' },
    expired: { type: 'final' },
  },
});
