/**
 * The nexo Retailer messages posd sends and reads (Adyen's Terminal API), and their mapping onto
 * posd's own protocol (devices/protocol/messages.ts), so the bridge drives a nexo terminal with the
 * same machine and the same rules as a WebSocket or serial one. The field names are the nexo ones
 * (ISO 20022 style); docs/terminals-nexo.md lists every message and field used.
 *
 * Typed here rather than with the library's models: in @adyen/api-library 32 their enums
 * (`MessageCategoryType`, `MessageClassType`, ...) are numeric TypeScript enums, which only its
 * ObjectSerializer (the whole models index, ~150 ms and ~15 MiB to load) turns into the nexo words.
 * test/devices/nexo-messages.test.ts checks these shapes through that serializer.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Card, Charge, ForwardResult, Result } from '../protocol/messages.js';

export type NexoCategory = 'Payment' | 'Abort' | 'TransactionStatus' | 'Diagnosis' | 'Reversal';

export interface NexoHeader {
  ProtocolVersion: '3.0';
  MessageClass: 'Service';
  MessageCategory: NexoCategory;
  MessageType: 'Request' | 'Response';
  SaleID: string;
  ServiceID: string;
  POIID: string;
}

export interface NexoResponseBody {
  Result: 'Success' | 'Failure' | 'Partial';
  ErrorCondition?: string;
  AdditionalResponse?: string;
}

export interface NexoPaymentResponse {
  Response: NexoResponseBody;
  SaleData?: { SaleTransactionID?: { TransactionID?: string; TimeStamp?: string } };
  POIData?: { POITransactionID?: { TransactionID?: string; TimeStamp?: string } };
  PaymentResult?: {
    PaymentInstrumentData?: { CardData?: { PaymentBrand?: string; MaskedPan?: string } };
    PaymentAcquirerData?: { ApprovalCode?: string; AcquirerTransactionID?: { TransactionID?: string } };
    AmountsResp?: { Currency?: string; AuthorizedAmount?: number };
  };
}

export interface NexoTransactionStatusResponse {
  Response: NexoResponseBody;
  MessageReference?: { MessageCategory?: string; SaleID?: string; ServiceID?: string };
  RepeatedMessageResponse?: {
    MessageHeader?: Partial<NexoHeader>;
    RepeatedResponseMessageBody?: { PaymentResponse?: NexoPaymentResponse };
  };
}

export interface NexoDiagnosisResponse {
  Response: NexoResponseBody;
  POIStatus?: { GlobalStatus?: string };
}

/** Who posd is to the terminal (`SaleID`) and which terminal it talks to (`POIID`). */
export interface NexoParties {
  saleId: string;
  poiid: string;
}

/**
 * The ServiceID of a charge's PaymentRequest, from the command id alone: after a crash posd must
 * name the payment again (TransactionStatusRequest and AbortRequest refer to it by ServiceID) without
 * having stored anything. nexo allows 10 characters; a recovered answer is also checked against its
 * SaleTransactionID, so a collision cannot settle the wrong command.
 */
export function paymentServiceId(commandId: string): string {
  return BigInt(`0x${createHash('sha256').update(commandId).digest('hex').slice(0, 15)}`)
    .toString(36)
    .padStart(10, '0')
    .slice(-10);
}

/** A fresh ServiceID for a request nothing will refer to later (status, abort, diagnosis). */
export function freshServiceId(): string {
  return randomBytes(8).readBigUInt64BE().toString(36).slice(-10).padStart(10, '0');
}

export function header(p: NexoParties, category: NexoCategory, serviceId: string): NexoHeader {
  return {
    ProtocolVersion: '3.0',
    MessageClass: 'Service',
    MessageCategory: category,
    MessageType: 'Request',
    SaleID: p.saleId,
    ServiceID: serviceId,
    POIID: p.poiid,
  };
}

/** Currencies posd charges in have two decimals (docs/money.md): cents to nexo's decimal amount. */
function decimalAmount(cents: number): number {
  return Math.round(cents) / 100;
}

/** posd's `charge` as a PaymentRequest whose SaleTransactionID is the command id. */
export function paymentRequest(p: NexoParties, charge: Charge, now: Date) {
  return {
    SaleToPOIRequest: {
      MessageHeader: header(p, 'Payment', paymentServiceId(charge.command_id)),
      PaymentRequest: {
        SaleData: {
          SaleTransactionID: { TransactionID: charge.command_id, TimeStamp: now.toISOString() },
          ...(charge.description ? { SaleReferenceID: charge.description.slice(0, 64) } : {}),
        },
        PaymentTransaction: { AmountsReq: { Currency: charge.currency, RequestedAmount: decimalAmount(charge.amount_in_cents) } },
        ...(charge.installments > 1
          ? { PaymentData: { Instalment: { InstalmentType: ['EqualInstalments'], Period: 1, PeriodUnit: 'Monthly', TotalNbOfPayments: charge.installments } } }
          : {}),
      },
    },
  };
}

/** posd's `cancel`: an AbortRequest naming the charge's PaymentRequest. The terminal's PaymentResponse confirms it, or not. */
export function abortRequest(p: NexoParties, commandId: string) {
  return {
    SaleToPOIRequest: {
      MessageHeader: header(p, 'Abort', freshServiceId()),
      AbortRequest: {
        AbortReason: 'MerchantAbort',
        MessageReference: { MessageCategory: 'Payment', SaleID: p.saleId, ServiceID: paymentServiceId(commandId), POIID: p.poiid },
      },
    },
  };
}

/** posd's `status_request` (and crash recovery): what became of the charge's PaymentRequest. */
export function transactionStatusRequest(p: NexoParties, commandId: string) {
  return {
    SaleToPOIRequest: {
      MessageHeader: header(p, 'TransactionStatus', freshServiceId()),
      TransactionStatusRequest: {
        ReceiptReprintFlag: false,
        MessageReference: { MessageCategory: 'Payment', SaleID: p.saleId, ServiceID: paymentServiceId(commandId) },
      },
    },
  };
}

/** Terminal health, in place of posd's pings. */
export function diagnosisRequest(p: NexoParties) {
  return { SaleToPOIRequest: { MessageHeader: header(p, 'Diagnosis', freshServiceId()), DiagnosisRequest: { HostDiagnosisFlag: false } } };
}

/** nexo's ErrorCondition for a payment stopped by an AbortRequest (Adyen answers `Aborted`; nexo also names `Cancel`). */
const CANCELED_CONDITIONS = new Set(['Aborted', 'Cancel']);

function cardOf(r: NexoPaymentResponse): Card | null {
  const data = r.PaymentResult?.PaymentInstrumentData?.CardData;
  const last4 = data?.MaskedPan?.replace(/\D/g, '').slice(-4);
  if (!data?.PaymentBrand || !last4 || last4.length !== 4) return null;
  return { network: data.PaymentBrand.slice(0, 32), last4 };
}

/**
 * A Response's `AdditionalResponse` as key/value pairs. Adyen sends it URL-encoded (`a=1&b=2`), or
 * as base64 of a JSON object when the terminal is set to; anything else reads as nothing.
 */
export function additionalResponse(text: string | undefined): Record<string, string> {
  if (!text) return {};
  const trimmed = text.trim();
  if (!trimmed.includes('=') || /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    try {
      const json = JSON.parse(Buffer.from(trimmed, 'base64').toString('utf8')) as { additionalData?: Record<string, unknown> } & Record<string, unknown>;
      const data = json?.additionalData && typeof json.additionalData === 'object' ? json.additionalData : json;
      if (data && typeof data === 'object') return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, String(v)]));
    } catch {
      // not base64 JSON: read as a query string below
    }
  }
  return Object.fromEntries(new URLSearchParams(trimmed));
}

/**
 * Whether the terminal approved this payment offline, without its processor (Adyen's store and
 * forward, or offline EMV): it says so with `offline=true` in the AdditionalResponse. Such an
 * approval is posd's `stored` outcome (protocol 2): the card is charged when the terminal forwards it.
 */
export function approvedOffline(r: NexoPaymentResponse): boolean {
  return r.Response.Result === 'Success' && additionalResponse(r.Response.AdditionalResponse).offline?.toLowerCase() === 'true';
}

/** The terminal's reference of an offline approval (how posd names it when its outcome comes): its POI transaction, else the command. */
export function offlineReferenceOf(commandId: string, r: NexoPaymentResponse): string {
  return (r.POIData?.POITransactionID?.TransactionID || commandId).slice(0, 128);
}

/** A PaymentResponse as posd's `result` for `commandId`. */
export function resultOfPayment(commandId: string, r: NexoPaymentResponse): Result {
  const base = { type: 'result' as const, command_id: commandId };
  const res = r.Response;
  if (approvedOffline(r)) {
    return {
      ...base,
      outcome: 'stored',
      offline_reference: offlineReferenceOf(commandId, r),
      card: cardOf(r),
      authorization_code: null,
      processor_reference: null,
      reason: null,
    };
  }
  if (res.Result === 'Success') {
    return {
      ...base,
      outcome: 'approved',
      authorization_code: r.PaymentResult?.PaymentAcquirerData?.ApprovalCode?.slice(0, 64) ?? null,
      card: cardOf(r),
      processor_reference: r.POIData?.POITransactionID?.TransactionID?.slice(0, 128) ?? null,
      processor_reference_at: r.POIData?.POITransactionID?.TimeStamp?.slice(0, 64) ?? null,
      reason: null,
    };
  }
  if (res.Result === 'Failure' && res.ErrorCondition && CANCELED_CONDITIONS.has(res.ErrorCondition))
    return { ...base, outcome: 'canceled', reason: 'canceled_on_terminal' };
  if (res.Result === 'Failure' && res.ErrorCondition === 'Refusal') return { ...base, outcome: 'declined', reason: 'declined', card: cardOf(r) };
  // Partial approval is never asked for; an answer posd cannot read as one of its outcomes is an error, with its words.
  return { ...base, outcome: 'error', reason: `nexo_${res.Result}_${res.ErrorCondition ?? 'none'}`.slice(0, 256) };
}

export type StatusAnswer =
  | { kind: 'result'; result: Result }
  | { kind: 'in_progress' }
  | { kind: 'not_found' }
  /** Busy, or an answer that does not name this command: ask again later. */
  | { kind: 'retry'; detail: string };

/** A TransactionStatusResponse about `commandId`'s payment, checked against its SaleTransactionID. */
export function statusAnswer(commandId: string, r: NexoTransactionStatusResponse): StatusAnswer {
  const res = r.Response;
  if (res.Result === 'Success') {
    const payment = r.RepeatedMessageResponse?.RepeatedResponseMessageBody?.PaymentResponse;
    if (!payment) return { kind: 'retry', detail: 'status answer without a payment response' };
    const tx = payment.SaleData?.SaleTransactionID?.TransactionID;
    if (tx !== commandId) return { kind: 'retry', detail: `status answer names sale transaction ${tx}, not ${commandId}` };
    return { kind: 'result', result: resultOfPayment(commandId, payment) };
  }
  if (res.ErrorCondition === 'InProgress') return { kind: 'in_progress' };
  if (res.ErrorCondition === 'NotFound') return { kind: 'not_found' };
  return { kind: 'retry', detail: `status answer ${res.Result} ${res.ErrorCondition ?? ''}`.trim() };
}

/**
 * What a TransactionStatusResponse says of a payment the terminal approved offline (`stored`), as
 * posd's `forward_result`: approved once the kept answer is a Success no longer marked offline,
 * declined when it became a refusal or another failure; null while it is still only stored, or when
 * the answer does not name this payment.
 */
export function forwardOfStatus(commandId: string, offlineReference: string, r: NexoTransactionStatusResponse): ForwardResult | null {
  const a = statusAnswer(commandId, r);
  if (a.kind !== 'result') return null;
  const base = { type: 'forward_result' as const, offline_reference: offlineReference, command_id: commandId };
  const { result } = a;
  if (result.outcome === 'stored') return null;
  if (result.outcome === 'approved') {
    return {
      ...base,
      outcome: 'approved',
      authorization_code: result.authorization_code ?? null,
      card: result.card ?? null,
      processor_reference: result.processor_reference ?? null,
      reason: null,
    };
  }
  return { ...base, outcome: 'declined', card: result.card ?? null, reason: result.reason ?? 'declined' };
}
