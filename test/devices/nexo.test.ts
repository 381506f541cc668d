/**
 * The nexo driver's pure parts: NexoCrypto through the library's own module (both ways, and against
 * a terminal side written with the library directly), and the mapping of posd's commands onto nexo
 * messages and back, checked through the library's ObjectSerializer.
 */
import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { NexoCryptoError, openNexo, sealNexo, type SecuredMessage } from '../../devices/nexo/crypto.js';
import {
  abortRequest,
  additionalResponse,
  diagnosisRequest,
  forwardOfStatus,
  paymentRequest,
  paymentServiceId,
  resultOfPayment,
  statusAnswer,
  transactionStatusRequest,
  type NexoPaymentResponse,
} from '../../devices/nexo/messages.js';
import type { Charge } from '../../devices/protocol/messages.js';
import {
  answerOfRefundPayment,
  answerOfReversal,
  refundPaymentRequest,
  refundServiceId,
  refundStatusRequest,
  reversalRequest,
  type TerminalRefund,
} from '../../devices/nexo/refunds.js';

const require = createRequire(import.meta.url);
const KEY = { keyIdentifier: 'posdtest', passphrase: 'correct horse battery staple', keyVersion: 3 };
const LIB_KEY = { KeyIdentifier: KEY.keyIdentifier, Passphrase: KEY.passphrase, KeyVersion: KEY.keyVersion, AdyenCryptoVersion: 1 };
const parties = { saleId: 'posd', poiid: 'V400m-324688179' };
const charge: Charge = {
  type: 'charge',
  command_id: 'tsc_0123456789abcdef',
  amount_in_cents: 12_345,
  currency: 'GTQ',
  installments: 1,
  description: 'Sale 7',
  print_receipt: true,
  show_post_payment_screens: false,
  tax_id: null,
};

describe('NexoCrypto', () => {
  it('a message sealed under the key opens under it, and only under it', () => {
    const clear = paymentRequest(parties, charge, new Date('2026-12-07T12:00:00Z'));
    const sealed = sealNexo(clear, KEY);
    expect(JSON.stringify(sealed)).not.toContain(charge.command_id);
    expect(sealed.SaleToPOIRequest.SecurityTrailer).toMatchObject({ KeyIdentifier: 'posdtest', KeyVersion: 3, AdyenCryptoVersion: 1 });
    expect(openNexo(JSON.parse(JSON.stringify(sealed)), KEY)).toEqual(clear);
    const wrong = (k: typeof KEY) => {
      try {
        openNexo(sealed, k);
      } catch (err) {
        return err;
      }
      return undefined;
    };
    for (const other of [
      { ...KEY, passphrase: 'another' },
      { ...KEY, keyIdentifier: 'other' },
      { ...KEY, keyVersion: 4 },
    ]) {
      const err = wrong(other);
      expect(err).toBeInstanceOf(NexoCryptoError);
      expect((err as NexoCryptoError).wrongKey).toBe(true);
    }
  });

  it('derives a key from its passphrase once, not for every message', () => {
    const nodeCrypto = require('node:crypto') as typeof import('node:crypto');
    const spy = vi.spyOn(nodeCrypto, 'pbkdf2Sync');
    try {
      const key = { ...KEY, passphrase: `derived once ${Math.random()}` };
      for (let i = 0; i < 5; i++) openNexo(sealNexo(diagnosisRequest(parties), key), key);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('a tampered blob fails its HMAC', () => {
    const sealed = sealNexo(diagnosisRequest(parties), KEY) as Record<string, SecuredMessage>;
    const blob = Buffer.from(sealed.SaleToPOIRequest.NexoBlob, 'base64');
    blob[blob.length - 1] ^= 1;
    sealed.SaleToPOIRequest.NexoBlob = blob.toString('base64');
    expect(() => openNexo(sealed, KEY)).toThrow(NexoCryptoError);
  });

  it('speaks with a terminal side written with the library itself', () => {
    const NexoCrypto = require('@adyen/api-library/lib/src/security/nexoCrypto.js').default;
    // posd to the terminal: the library opens what posd sealed.
    const ours = sealNexo(transactionStatusRequest(parties, charge.command_id), KEY);
    const text = new NexoCrypto().decrypt(ours.SaleToPOIRequest, LIB_KEY);
    expect(JSON.parse(text).SaleToPOIRequest.MessageHeader).toMatchObject({ MessageCategory: 'TransactionStatus', POIID: parties.poiid });
    expect(JSON.parse(text).SaleToPOIRequest.TransactionStatusRequest.MessageReference.ServiceID).toBe(paymentServiceId(charge.command_id));
    // The terminal to posd: posd opens what the library sealed.
    const response = { SaleToPOIResponse: { MessageHeader: { MessageCategory: 'Diagnosis' }, DiagnosisResponse: { Response: { Result: 'Success' } } } };
    const theirs = { SaleToPOIResponse: NexoCrypto.encrypt(response.SaleToPOIResponse.MessageHeader, JSON.stringify(response), LIB_KEY) };
    expect(openNexo(theirs, KEY)).toEqual(response);
  });
});

describe('posd commands as nexo messages', () => {
  it('a charge is a PaymentRequest whose SaleTransactionID is the command id, as the library models it', () => {
    const { ObjectSerializer } = require('@adyen/api-library/lib/src/typings/terminal/models.js');
    const req = paymentRequest(parties, charge, new Date('2026-12-07T12:00:00Z'));
    const header = req.SaleToPOIRequest.MessageHeader;
    expect(header).toMatchObject({ MessageCategory: 'Payment', MessageClass: 'Service', MessageType: 'Request', SaleID: 'posd', POIID: parties.poiid });
    expect(header.ServiceID).toBe(paymentServiceId(charge.command_id));
    expect(header.ServiceID).toMatch(/^[0-9a-z]{10}$/);
    expect(paymentServiceId('tsc_other')).not.toBe(header.ServiceID);
    expect(req.SaleToPOIRequest.PaymentRequest.SaleData.SaleTransactionID.TransactionID).toBe(charge.command_id);
    expect(req.SaleToPOIRequest.PaymentRequest.PaymentTransaction.AmountsReq).toEqual({ Currency: 'GTQ', RequestedAmount: 123.45 });
    for (const msg of [req, abortRequest(parties, charge.command_id), transactionStatusRequest(parties, charge.command_id), diagnosisRequest(parties)]) {
      const typed = ObjectSerializer.deserialize(JSON.parse(JSON.stringify(msg)), 'TerminalApiRequest');
      expect(ObjectSerializer.serialize(typed, 'TerminalApiRequest')).toEqual(msg);
    }
    expect(abortRequest(parties, charge.command_id).SaleToPOIRequest.AbortRequest.MessageReference).toMatchObject({
      MessageCategory: 'Payment',
      ServiceID: header.ServiceID,
    });
  });

  const base: Omit<NexoPaymentResponse, 'Response'> = {
    SaleData: { SaleTransactionID: { TransactionID: charge.command_id } },
    POIData: { POITransactionID: { TransactionID: 'ABC123.psp', TimeStamp: '2026-12-07T12:00:05.000Z' } },
    PaymentResult: {
      PaymentInstrumentData: { CardData: { PaymentBrand: 'mc', MaskedPan: '541333 **** 9999' } },
      PaymentAcquirerData: { ApprovalCode: '123456' },
    },
  };

  it('PaymentResponses become posd results', () => {
    expect(resultOfPayment(charge.command_id, { ...base, Response: { Result: 'Success' } })).toEqual({
      type: 'result',
      command_id: charge.command_id,
      outcome: 'approved',
      authorization_code: '123456',
      card: { network: 'mc', last4: '9999' },
      processor_reference: 'ABC123.psp',
      processor_reference_at: '2026-12-07T12:00:05.000Z',
      reason: null,
    });
    expect(resultOfPayment(charge.command_id, { ...base, Response: { Result: 'Failure', ErrorCondition: 'Aborted' } }).outcome).toBe('canceled');
    expect(resultOfPayment(charge.command_id, { ...base, Response: { Result: 'Failure', ErrorCondition: 'Refusal' } }).outcome).toBe('declined');
    expect(resultOfPayment(charge.command_id, { ...base, Response: { Result: 'Failure', ErrorCondition: 'UnreachableHost' } })).toMatchObject({
      outcome: 'error',
      reason: 'nexo_Failure_UnreachableHost',
    });
  });

  it('TransactionStatusResponses: the kept payment, in progress, not found, or about another sale', () => {
    const found = {
      Response: { Result: 'Success' as const },
      RepeatedMessageResponse: { RepeatedResponseMessageBody: { PaymentResponse: { ...base, Response: { Result: 'Success' as const } } } },
    };
    expect(statusAnswer(charge.command_id, found)).toMatchObject({ kind: 'result', result: { outcome: 'approved' } });
    expect(statusAnswer('tsc_another', found)).toMatchObject({ kind: 'retry' });
    expect(statusAnswer(charge.command_id, { Response: { Result: 'Failure', ErrorCondition: 'InProgress' } })).toEqual({ kind: 'in_progress' });
    expect(statusAnswer(charge.command_id, { Response: { Result: 'Failure', ErrorCondition: 'NotFound' } })).toEqual({ kind: 'not_found' });
    expect(statusAnswer(charge.command_id, { Response: { Result: 'Failure', ErrorCondition: 'Busy' } })).toMatchObject({ kind: 'retry' });
  });

  it('an approval marked offline in its AdditionalResponse is a stored payment, named by its POI transaction', () => {
    const offline = { Result: 'Success' as const, AdditionalResponse: 'offline=true&offlineAuthCode=Offline%20approved&unconfirmedBatchCount=3' };
    expect(additionalResponse(offline.AdditionalResponse)).toMatchObject({ offline: 'true', offlineAuthCode: 'Offline approved', unconfirmedBatchCount: '3' });
    // Adyen's other form: base64 of a JSON object (additionalData inside, or flat).
    const b64 = Buffer.from(JSON.stringify({ additionalData: { offline: 'true' } })).toString('base64');
    expect(additionalResponse(b64)).toEqual({ offline: 'true' });
    expect(resultOfPayment(charge.command_id, { ...base, Response: offline })).toEqual({
      type: 'result',
      command_id: charge.command_id,
      outcome: 'stored',
      offline_reference: 'ABC123.psp',
      card: { network: 'mc', last4: '9999' },
      authorization_code: null,
      processor_reference: null,
      reason: null,
    });
    expect(resultOfPayment(charge.command_id, { ...base, Response: { Result: 'Success', AdditionalResponse: b64 } }).outcome).toBe('stored');
    expect(resultOfPayment(charge.command_id, { ...base, Response: { Result: 'Success', AdditionalResponse: 'offline=false' } }).outcome).toBe('approved');

    // Its outcome, from the terminal's kept answer: still offline, approved, refused.
    const status = (Response: NexoPaymentResponse['Response']) => ({
      Response: { Result: 'Success' as const },
      RepeatedMessageResponse: { RepeatedResponseMessageBody: { PaymentResponse: { ...base, Response } } },
    });
    expect(forwardOfStatus(charge.command_id, 'ABC123.psp', status(offline))).toBeNull();
    expect(forwardOfStatus(charge.command_id, 'ABC123.psp', status({ Result: 'Success', AdditionalResponse: 'offline=false' }))).toEqual({
      type: 'forward_result',
      offline_reference: 'ABC123.psp',
      command_id: charge.command_id,
      outcome: 'approved',
      authorization_code: '123456',
      card: { network: 'mc', last4: '9999' },
      processor_reference: 'ABC123.psp',
      reason: null,
    });
    expect(forwardOfStatus(charge.command_id, 'ABC123.psp', status({ Result: 'Failure', ErrorCondition: 'Refusal' }))).toMatchObject({
      outcome: 'declined',
      reason: 'declined',
    });
    expect(forwardOfStatus('tsc_another', 'ABC123.psp', status({ Result: 'Success' }))).toBeNull();
    expect(forwardOfStatus(charge.command_id, 'ABC123.psp', { Response: { Result: 'Failure', ErrorCondition: 'NotFound' } })).toBeNull();
  });
});

describe('refunds as nexo messages', () => {
  const original = { TransactionID: 'ABC123.psp', TimeStamp: '2026-12-07T12:00:05.000Z' };
  const reversal: TerminalRefund = { refundId: 're_0123456789', attempt: 1, kind: 'reversal', original, amountInCents: 12_345, currency: 'GTQ' };
  const unreferenced: TerminalRefund = { ...reversal, kind: 'refund_payment', original: null };

  it('a referenced refund is a ReversalRequest naming the POITransactionID, an unreferenced one a Refund PaymentRequest, as the library models them', () => {
    const { ObjectSerializer } = require('@adyen/api-library/lib/src/typings/terminal/models.js');
    const now = new Date('2026-12-08T09:00:00Z');
    const rev = reversalRequest(parties, reversal, now);
    expect(rev.SaleToPOIRequest.MessageHeader).toMatchObject({ MessageCategory: 'Reversal', ServiceID: refundServiceId(reversal) });
    expect(rev.SaleToPOIRequest.ReversalRequest).toEqual({
      SaleData: { SaleTransactionID: { TransactionID: 're_0123456789', TimeStamp: now.toISOString() } },
      OriginalPOITransaction: { POITransactionID: original },
      ReversalReason: 'MerchantCancel',
    });
    const pay = refundPaymentRequest(parties, unreferenced, now);
    expect(pay.SaleToPOIRequest.PaymentRequest).toMatchObject({
      PaymentTransaction: { AmountsReq: { Currency: 'GTQ', RequestedAmount: 123.45 } },
      PaymentData: { PaymentType: 'Refund' },
    });
    // Each attempt of a refund has its own ServiceID, the same after a restart.
    expect(refundServiceId({ ...reversal, attempt: 2 })).not.toBe(refundServiceId(reversal));
    expect(refundServiceId(reversal)).toMatch(/^[0-9a-z]{10}$/);
    const statusOfReversal = refundStatusRequest(parties, reversal);
    expect(statusOfReversal.SaleToPOIRequest.TransactionStatusRequest.MessageReference).toEqual({
      MessageCategory: 'Reversal',
      SaleID: 'posd',
      ServiceID: refundServiceId(reversal),
    });
    expect(refundStatusRequest(parties, unreferenced).SaleToPOIRequest.TransactionStatusRequest.MessageReference.MessageCategory).toBe('Payment');
    for (const msg of [rev, pay, statusOfReversal]) {
      const typed = ObjectSerializer.deserialize(JSON.parse(JSON.stringify(msg)), 'TerminalApiRequest');
      expect(ObjectSerializer.serialize(typed, 'TerminalApiRequest')).toEqual(msg);
    }
  });

  it('ReversalResponses and Refund PaymentResponses become the refund outcome', () => {
    const named = { OriginalPOITransaction: { POITransactionID: { TransactionID: original.TransactionID } } };
    expect(answerOfReversal(reversal, { ...named, Response: { Result: 'Success' }, POIData: { POITransactionID: { TransactionID: 'REV1.psp' } } })).toEqual({
      kind: 'succeeded',
      reference: 'REV1.psp',
    });
    expect(answerOfReversal(reversal, { ...named, Response: { Result: 'Failure', ErrorCondition: 'Refusal' } })).toEqual({
      kind: 'failed',
      reason: 'declined',
    });
    expect(answerOfReversal(reversal, { ...named, Response: { Result: 'Failure', ErrorCondition: 'NotAllowed' } })).toEqual({
      kind: 'failed',
      reason: 'nexo_Failure_NotAllowed',
    });
    expect(answerOfReversal(reversal, { ...named, Response: { Result: 'Failure', ErrorCondition: 'Busy' } })).toEqual({ kind: 'busy' });
    // An answer about another payment settles nothing.
    expect(
      answerOfReversal(reversal, { OriginalPOITransaction: { POITransactionID: { TransactionID: 'OTHER.psp' } }, Response: { Result: 'Success' } }).kind,
    ).toBe('unknown');
    const sale = { SaleData: { SaleTransactionID: { TransactionID: 're_0123456789' } } };
    expect(answerOfRefundPayment(unreferenced, { ...sale, Response: { Result: 'Success' } })).toEqual({ kind: 'succeeded', reference: null });
    expect(answerOfRefundPayment(unreferenced, { ...sale, Response: { Result: 'Failure', ErrorCondition: 'Aborted' } })).toEqual({
      kind: 'failed',
      reason: 'canceled_on_terminal',
    });
    expect(answerOfRefundPayment(unreferenced, { SaleData: { SaleTransactionID: { TransactionID: 'tsc_x' } }, Response: { Result: 'Success' } }).kind).toBe(
      'unknown',
    );
  });
});
