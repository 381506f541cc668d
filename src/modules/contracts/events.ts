import type { EventExample } from '../../events/catalogue.js';
import { newId, randomToken } from '../../ids.js';
import { contractSendPayload } from './service.js';

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
      field_values: '{}',
      verified_channel: null,
      body_sha256: null,
      pdf_file: null,
      code_hash: null,
      code_channel: null,
      code_expires_at: null,
      code_attempts: 0,
      viewed_at: null,
      signed_at: null,
      valid_until: null,
      declined_at: null,
      decline_reason: null,
      reminder_sent_at: null,
      expires_at: i.createdAt,
      created_at: i.createdAt,
      updated_at: i.createdAt,
    });
  },
};
