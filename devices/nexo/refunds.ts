/**
 * Refunds carried out by a nexo terminal (docs/terminals-nexo.md "Refunds"):
 *
 * - referenced: a `ReversalRequest` naming the payment by the `POITransactionID` its PaymentResponse
 *   returned (`OriginalPOITransaction`); no card is needed, the terminal's acquirer returns the money.
 * - unreferenced: a `PaymentRequest` with `PaymentType` `Refund`; the customer presents the card
 *   again. Used only when posd does not hold the payment's POITransactionID.
 *
 * Each request has a ServiceID posd derives from the refund id and its attempt number, so after a
 * crash the same request is named again (TransactionStatusRequest) without anything else stored.
 * A lost answer is never followed by a second request before the terminal has said, by status, that
 * it does not hold the first one: that is the caller's rule (src/modules/terminals/link/nexo-refunds.ts).
 */
import type { NexoClient } from './client.js';
import {
  header,
  paymentServiceId,
  freshServiceId,
  type NexoParties,
  type NexoPaymentResponse,
  type NexoResponseBody,
  type NexoTransactionStatusResponse,
} from './messages.js';

/** nexo's TransactionIdentification: what a PaymentResponse's POIData.POITransactionID holds. */
export interface PoiTransaction {
  TransactionID: string;
  TimeStamp: string;
}

export interface TerminalRefund {
  /** posd's refund id: the SaleTransactionID of the request. */
  refundId: string;
  /** Which request of this refund (a new one only after the terminal answered or never held the last). */
  attempt: number;
  kind: 'reversal' | 'refund_payment';
  /** The payment's POITransactionID (required for `reversal`). */
  original: PoiTransaction | null;
  amountInCents: number;
  currency: string;
}

export interface NexoReversalResponse {
  Response: NexoResponseBody;
  POIData?: { POITransactionID?: Partial<PoiTransaction> };
  OriginalPOITransaction?: { POITransactionID?: Partial<PoiTransaction> };
  ReversedAmount?: number;
}

export type RefundAnswer =
  | { kind: 'succeeded'; reference: string | null }
  | { kind: 'failed'; reason: string }
  /** The terminal could not take it now (Busy): it holds nothing, a new attempt may follow. */
  | { kind: 'busy' }
  | { kind: 'in_progress' }
  | { kind: 'not_found' }
  /** An answer that says none of these (or names another transaction): ask again later. */
  | { kind: 'unknown'; detail: string };

export function refundServiceId(r: Pick<TerminalRefund, 'refundId' | 'attempt'>): string {
  return paymentServiceId(`${r.refundId}#${r.attempt}`);
}

const category = (r: TerminalRefund) => (r.kind === 'reversal' ? 'Reversal' : 'Payment');

export function reversalRequest(p: NexoParties, r: TerminalRefund, now: Date) {
  if (!r.original) throw new Error(`refund ${r.refundId}: a reversal needs the payment's POITransactionID`);
  return {
    SaleToPOIRequest: {
      MessageHeader: header(p, 'Reversal', refundServiceId(r)),
      ReversalRequest: {
        SaleData: { SaleTransactionID: { TransactionID: r.refundId, TimeStamp: now.toISOString() } },
        OriginalPOITransaction: { POITransactionID: { TransactionID: r.original.TransactionID, TimeStamp: r.original.TimeStamp } },
        ReversalReason: 'MerchantCancel',
      },
    },
  };
}

export function refundPaymentRequest(p: NexoParties, r: TerminalRefund, now: Date) {
  return {
    SaleToPOIRequest: {
      MessageHeader: header(p, 'Payment', refundServiceId(r)),
      PaymentRequest: {
        SaleData: { SaleTransactionID: { TransactionID: r.refundId, TimeStamp: now.toISOString() } },
        PaymentTransaction: { AmountsReq: { Currency: r.currency, RequestedAmount: Math.round(r.amountInCents) / 100 } },
        PaymentData: { PaymentType: 'Refund' },
      },
    },
  };
}

export function refundStatusRequest(p: NexoParties, r: TerminalRefund) {
  return {
    SaleToPOIRequest: {
      MessageHeader: header(p, 'TransactionStatus', freshServiceId()),
      TransactionStatusRequest: {
        ReceiptReprintFlag: false,
        MessageReference: { MessageCategory: category(r), SaleID: p.saleId, ServiceID: refundServiceId(r) },
      },
    },
  };
}

function failed(res: NexoResponseBody): RefundAnswer {
  if (res.ErrorCondition === 'Busy') return { kind: 'busy' };
  if (res.ErrorCondition === 'Refusal') return { kind: 'failed', reason: 'declined' };
  if (res.ErrorCondition === 'Aborted' || res.ErrorCondition === 'Cancel') return { kind: 'failed', reason: 'canceled_on_terminal' };
  return { kind: 'failed', reason: `nexo_${res.Result}_${res.ErrorCondition ?? 'none'}`.slice(0, 256) };
}

/** A ReversalResponse about `r`: it must name the payment `r` reverses, when it names one. */
export function answerOfReversal(r: TerminalRefund, x: NexoReversalResponse): RefundAnswer {
  const named = x.OriginalPOITransaction?.POITransactionID?.TransactionID;
  if (named !== undefined && named !== r.original?.TransactionID) return { kind: 'unknown', detail: `reversal answer names ${named}` };
  if (x.Response.Result === 'Success') return { kind: 'succeeded', reference: x.POIData?.POITransactionID?.TransactionID?.slice(0, 128) ?? null };
  return failed(x.Response);
}

/** A PaymentResponse (PaymentType Refund) about `r`, checked against its SaleTransactionID. */
export function answerOfRefundPayment(r: TerminalRefund, x: NexoPaymentResponse): RefundAnswer {
  const tx = x.SaleData?.SaleTransactionID?.TransactionID;
  if (tx !== undefined && tx !== r.refundId) return { kind: 'unknown', detail: `refund answer names sale transaction ${tx}` };
  if (x.Response.Result === 'Success') return { kind: 'succeeded', reference: x.POIData?.POITransactionID?.TransactionID?.slice(0, 128) ?? null };
  return failed(x.Response);
}

function bodyOf(answer: Record<string, unknown> | null, name: string): Record<string, unknown> | undefined {
  return (answer?.SaleToPOIResponse as Record<string, unknown> | undefined)?.[name] as Record<string, unknown> | undefined;
}

/**
 * Sends the refund's request and reads its answer. Rejects when the answer is lost (connection cut,
 * timeout, a key problem): the terminal may hold the request, so the caller asks its status next.
 */
export async function sendRefund(client: NexoClient, r: TerminalRefund, timeoutMs: number, now: Date): Promise<RefundAnswer> {
  if (r.kind === 'reversal') {
    const x = bodyOf(await client.post(reversalRequest(client.parties, r, now), timeoutMs), 'ReversalResponse') as NexoReversalResponse | undefined;
    return x?.Response ? answerOfReversal(r, x) : { kind: 'unknown', detail: 'no ReversalResponse in the answer' };
  }
  const x = bodyOf(await client.post(refundPaymentRequest(client.parties, r, now), timeoutMs), 'PaymentResponse') as NexoPaymentResponse | undefined;
  return x?.Response ? answerOfRefundPayment(r, x) : { kind: 'unknown', detail: 'no PaymentResponse in the answer' };
}

/** What the terminal holds of the refund's request (TransactionStatusRequest). Rejects when no answer comes. */
export async function refundStatus(client: NexoClient, r: TerminalRefund, timeoutMs: number): Promise<RefundAnswer> {
  const x = bodyOf(await client.post(refundStatusRequest(client.parties, r), timeoutMs), 'TransactionStatusResponse') as
    | (NexoTransactionStatusResponse & {
        RepeatedMessageResponse?: { RepeatedResponseMessageBody?: { ReversalResponse?: NexoReversalResponse } };
      })
    | undefined;
  if (!x?.Response) return { kind: 'unknown', detail: 'no TransactionStatusResponse in the answer' };
  if (x.Response.Result === 'Success') {
    const body = x.RepeatedMessageResponse?.RepeatedResponseMessageBody;
    if (r.kind === 'reversal' && body?.ReversalResponse?.Response) return answerOfReversal(r, body.ReversalResponse);
    if (r.kind === 'refund_payment' && body?.PaymentResponse?.Response) return answerOfRefundPayment(r, body.PaymentResponse);
    return { kind: 'unknown', detail: 'status answer without the refund response' };
  }
  if (x.Response.ErrorCondition === 'InProgress') return { kind: 'in_progress' };
  if (x.Response.ErrorCondition === 'NotFound') return { kind: 'not_found' };
  return { kind: 'unknown', detail: `status answer ${x.Response.Result} ${x.Response.ErrorCondition ?? ''}`.trim() };
}
