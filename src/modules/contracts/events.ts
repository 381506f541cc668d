import type { EventExample } from '../../events/catalogue.js';
import { newId, randomToken } from '../../ids.js';
import { contractSendPayload, UNSET_AT_SEND } from './service.js';

/** The test-send payload of `contract.send` (`PosdModule.events`): an example row through the emitter's builder. */
export const contractEventExamples: Record<string, EventExample> = {
  'contract.send': (i, ctx) => {
    const customerId = newId('cus');
    return contractSendPayload(ctx, {
      id: newId('ctr'),
      account_id: i.accountId,
      live_mode: i.liveMode ? 1 : 0,
      template_id: newId('ctpl'),
      customer_id: customerId,
      customer: JSON.stringify({ id: customerId, name: 'Ana López', email: 'ana.lopez@example.com', phone: '+50255550123' }),
      booking_id: null,
      checkout_id: newId('ch'),
      title: 'Consentimiento informado',
      body: '<p>Consentimiento informado</p>',
      status: 'sent',
      sent_via: 'email',
      signing_token: randomToken(32),
      signing_url: 'https://example.com/sign/example',
      ...UNSET_AT_SEND,
      expires_at: i.createdAt,
      created_at: i.createdAt,
      updated_at: i.createdAt,
    });
  },
};
