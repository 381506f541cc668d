/**
 * A nexo terminal (Adyen's Terminal API, local) for tests and demos: HTTPS on its own certificate,
 * every message opened and sealed with NexoCrypto under the shared key, as a real terminal does.
 * It keeps each payment by its ServiceID, answers TransactionStatusRequest from what it kept, and
 * completes a payment whose request connection went away (a real terminal does too).
 *
 * Modes: `approve`, `decline`, `slow` (a card flow long enough to cancel in: `slowMs`, half waiting
 * for the card, half authorizing), `timeout` (the payment never ends), `drop` (the connection is cut
 * while authorizing; the payment is approved anyway), `wrong_key` (the terminal holds another
 * key: it cannot open posd's messages and answers with a clear Reject, as Adyen's terminals do),
 * `manual` (the test moves each payment: `authorize`, then `complete` with its outcome; an
 * AbortRequest is only recorded, as by a terminal that takes its time to stop), `offline` (it
 * cannot reach its processor: it approves offline, `offline=true` in the AdditionalResponse as
 * Adyen's terminals do, and keeps the payment until `forward` says what the processor answered;
 * TransactionStatusRequest then repeats that outcome).
 * An AbortRequest stops a payment still waiting for the card (`Aborted`); once it is authorizing the
 * abort is too late and the payment ends as it would have.
 *
 * Refunds: a PaymentRequest with `PaymentType` `Refund` runs as a payment does (its `paymentType`
 * says which); a `ReversalRequest` reverses the approved payment its `OriginalPOITransaction` names,
 * once, as `reversalMode` says: `approve`, `decline`, `timeout` (never ends until the test calls
 * `completeReversal`), `drop` (the connection is cut, the reversal is approved anyway).
 */
import { createServer, type Server } from 'node:https';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { openNexo, sealNexo, type NexoKey } from '../nexo/crypto.js';
import type { NexoHeader, NexoPaymentResponse } from '../nexo/messages.js';
import type { NexoReversalResponse } from '../nexo/refunds.js';

export const NEXO_MODES = ['approve', 'decline', 'slow', 'timeout', 'drop', 'wrong_key', 'manual', 'offline'] as const;
export type NexoMode = (typeof NEXO_MODES)[number];
export const NEXO_REVERSAL_MODES = ['approve', 'decline', 'timeout', 'drop'] as const;
export type NexoReversalMode = (typeof NEXO_REVERSAL_MODES)[number];

export interface NexoSimulatorOptions {
  key: NexoKey;
  /** PEM key and certificate the terminal presents (its CN starts with the POIID). */
  tls: { key: string | Buffer; cert: string | Buffer };
  poiid: string;
  mode?: NexoMode;
  reversalMode?: NexoReversalMode;
  slowMs?: number;
  host?: string;
  port?: number;
}

export interface SimulatedPayment {
  serviceId: string;
  saleTransactionId: string;
  amount: number;
  currency: string;
  stage: 'waiting_card' | 'authorizing' | 'done';
  /** `performance.now()` when its request was opened: benches time posd's hand-off by it. */
  receivedAt: number;
  abortedTooLate: boolean;
  /** AbortRequests received for it. */
  aborts: number;
  /** Its request's connection went away before its answer (the caller gave up, or `drop`). */
  abandoned: boolean;
  /** `Normal` for a charge, `Refund` for an unreferenced refund. */
  paymentType: string;
  response?: NexoPaymentResponse;
  header: NexoHeader;
  /** `offline` mode: approved offline (`stored`), then what the processor answered when forwarded. */
  offline?: 'stored' | 'approved' | 'declined';
}

export interface SimulatedReversal {
  serviceId: string;
  /** The SaleTransactionID of the request (posd's refund id). */
  saleTransactionId: string;
  /** The POITransactionID of the payment it reverses, as the request named it. */
  original: string;
  originalAt: string;
  stage: 'processing' | 'done';
  /** `performance.now()` when its request was opened. */
  receivedAt: number;
  abandoned: boolean;
  response?: NexoReversalResponse;
  header: NexoHeader;
}

export interface NexoSimulator {
  readonly port: number;
  mode: NexoMode;
  reversalMode: NexoReversalMode;
  /** Answers carry no POIData.POITransactionID (a terminal that does not give one): no reversal is possible. */
  withoutPoiTransaction: boolean;
  /** `slow`'s card flow, ms: the first half waiting for the card, the second authorizing. */
  slowMs: number;
  /** Messages it could not open (another key): each answered with a clear Reject. */
  rejected: number;
  /** Every payment received, by ServiceID, in order. */
  readonly payments: Map<string, SimulatedPayment>;
  /** Requests received, by nexo category (Payment, Abort, TransactionStatus, Diagnosis). */
  readonly requests: Record<string, number>;
  /** Every ReversalRequest received, by ServiceID, in order. */
  readonly reversals: Map<string, SimulatedReversal>;
  /** Successful reversals of a payment (by its POITransactionID.TransactionID): a double refund shows here. */
  reversedCount(poiTransactionId: string): number;
  /** Resolves once a reversal requested under this SaleTransactionID reaches `stage`. */
  reachedReversal(saleTransactionId: string, stage: SimulatedReversal['stage']): Promise<SimulatedReversal>;
  /** `timeout`: the open reversal of this SaleTransactionID ends with this outcome. */
  completeReversal(saleTransactionId: string, outcome: 'approved' | 'declined'): void;
  /** Approved payments per SaleTransactionID: a double charge shows here. */
  approvedCount(saleTransactionId: string): number;
  /** Resolves once a payment for this sale transaction reaches `stage`. */
  reached(saleTransactionId: string, stage: SimulatedPayment['stage']): Promise<SimulatedPayment>;
  /** `manual`: the card is read, the payment is authorizing (an abort is now too late). */
  authorize(saleTransactionId: string): void;
  /** `manual`: the payment ends with this outcome and its PaymentResponse is sent. */
  complete(saleTransactionId: string, outcome: 'approved' | 'declined' | 'canceled'): void;
  /** `offline`: the processor is back and answered this payment approved offline; its kept answer now says so. */
  forward(saleTransactionId: string, outcome: 'approved' | 'declined'): void;
  close(): Promise<void>;
}

interface PaymentBody {
  SaleData?: { SaleTransactionID?: { TransactionID?: string } };
  PaymentTransaction?: { AmountsReq?: { Currency?: string; RequestedAmount?: number } };
}
interface ReversalBody {
  SaleData?: { SaleTransactionID?: { TransactionID?: string } };
  OriginalPOITransaction?: { POITransactionID?: { TransactionID?: string; TimeStamp?: string } };
}
interface ReferenceBody {
  MessageReference?: { ServiceID?: string };
}

const WRONG_KEY: NexoKey = { keyIdentifier: 'other', passphrase: 'not the shared one', keyVersion: 1 };

export async function startNexoSimulator(opts: NexoSimulatorOptions): Promise<NexoSimulator> {
  const payments = new Map<string, SimulatedPayment>();
  const reversals = new Map<string, SimulatedReversal>();
  const requests: Record<string, number> = {};
  const waiters: Array<() => void> = [];
  const timers = new Set<NodeJS.Timeout>();
  const poke = () => waiters.splice(0).forEach((w) => w());
  let transactionSeq = 0;

  const sim: NexoSimulator = {
    port: 0,
    mode: opts.mode ?? 'approve',
    reversalMode: opts.reversalMode ?? 'approve',
    withoutPoiTransaction: false,
    slowMs: opts.slowMs ?? 4_000,
    rejected: 0,
    payments,
    requests,
    reversals,
    reversedCount: (original) => [...reversals.values()].filter((r) => r.original === original && r.response?.Response.Result === 'Success').length,
    reachedReversal: (tx, stage) =>
      new Promise((resolve) => {
        const check = () => {
          const r = [...reversals.values()].find((x) => x.saleTransactionId === tx && (stage === 'processing' || x.stage === 'done'));
          if (r) resolve(r);
          else waiters.push(check);
        };
        check();
      }),
    completeReversal: (tx, outcome) => {
      const r = [...reversals.values()].find((x) => x.saleTransactionId === tx && x.stage !== 'done');
      if (!r) throw new Error(`no open reversal for ${tx}`);
      endReversal(r, outcome);
      (r as SimulatedReversal & { answer?: () => void }).answer?.();
    },
    approvedCount: (tx) => [...payments.values()].filter((p) => p.saleTransactionId === tx && p.response?.Response.Result === 'Success').length,
    reached: (tx, stage) =>
      new Promise((resolve) => {
        const order = ['waiting_card', 'authorizing', 'done'];
        const check = () => {
          const p = [...payments.values()].find((x) => x.saleTransactionId === tx && order.indexOf(x.stage) >= order.indexOf(stage));
          if (p) resolve(p);
          else waiters.push(check);
        };
        check();
      }),
    authorize: (tx) => {
      const p = open(tx);
      p.stage = 'authorizing';
      poke();
    },
    complete: (tx, outcome) => {
      const p = open(tx);
      finish(p, outcome);
      (p as SimulatedPayment & { answer?: () => void }).answer?.();
    },
    forward: (tx, outcome) => {
      const p = [...payments.values()].find((x) => x.saleTransactionId === tx && x.offline === 'stored');
      if (!p?.response) throw new Error(`no payment approved offline for ${tx}`);
      p.offline = outcome;
      const r = p.response;
      const additional = `offline=false&unconfirmedBatchCount=${[...payments.values()].filter((x) => x.offline === 'stored').length}`;
      p.response =
        outcome === 'approved'
          ? {
              ...r,
              Response: { Result: 'Success', AdditionalResponse: additional },
              PaymentResult: { ...r.PaymentResult, PaymentAcquirerData: { ApprovalCode: String(200000 + transactionSeq++) } },
            }
          : { ...r, Response: { Result: 'Failure', ErrorCondition: 'Refusal', AdditionalResponse: `${additional}&refusalReason=05%20:%20Not%20approved` } };
      poke();
    },
    close: async () => {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const open = (tx: string): SimulatedPayment => {
    const p = [...payments.values()].find((x) => x.saleTransactionId === tx && x.stage !== 'done');
    if (!p) throw new Error(`no open payment for ${tx}`);
    return p;
  };

  const after = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  const respond = (res: ServerResponse, header: NexoHeader, name: string, body: unknown) => {
    if (res.destroyed) return;
    const clear = { SaleToPOIResponse: { MessageHeader: { ...header, MessageType: 'Response' }, [name]: body } };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(sealNexo(clear, sim.mode === 'wrong_key' ? WRONG_KEY : opts.key)));
  };

  const finish = (p: SimulatedPayment, outcome: 'approved' | 'declined' | 'canceled') => {
    if (p.stage === 'done') return;
    p.stage = 'done';
    transactionSeq++;
    const base = {
      SaleData: { SaleTransactionID: { TransactionID: p.saleTransactionId, TimeStamp: new Date().toISOString() } },
      POIData: { POITransactionID: { TransactionID: `SIM${String(transactionSeq).padStart(6, '0')}.${p.serviceId}`, TimeStamp: new Date().toISOString() } },
    };
    if (sim.withoutPoiTransaction) delete (base as { POIData?: unknown }).POIData;
    const card = { PaymentInstrumentData: { CardData: { PaymentBrand: 'mc', MaskedPan: '541333 **** 9999' } } };
    if (outcome === 'canceled') p.response = { ...base, Response: { Result: 'Failure', ErrorCondition: 'Aborted' } };
    else if (outcome === 'declined')
      p.response = {
        ...base,
        Response: { Result: 'Failure', ErrorCondition: 'Refusal', AdditionalResponse: 'refusalReason=05%20:%20Not%20approved' },
        PaymentResult: card,
      };
    else if (sim.mode === 'offline') {
      p.offline = 'stored';
      const batch = [...payments.values()].filter((x) => x.offline === 'stored').length;
      p.response = {
        ...base,
        Response: { Result: 'Success', AdditionalResponse: `offline=true&offlineAuthCode=Offline%20approved&unconfirmedBatchCount=${batch}` },
        PaymentResult: { ...card, AmountsResp: { Currency: p.currency, AuthorizedAmount: p.amount } },
      };
    } else {
      p.response = {
        ...base,
        Response: { Result: 'Success' },
        PaymentResult: {
          ...card,
          PaymentAcquirerData: { ApprovalCode: String(100000 + transactionSeq) },
          AmountsResp: { Currency: p.currency, AuthorizedAmount: p.amount },
        },
      };
    }
    poke();
  };

  const onPayment = (req: IncomingMessage, res: ServerResponse, header: NexoHeader, body: PaymentBody) => {
    const serviceId = header.ServiceID;
    const existing = payments.get(serviceId);
    if (existing) {
      // A ServiceID is used once: a second request under it is refused, the first one stands.
      respond(res, header, 'PaymentResponse', {
        Response: { Result: 'Failure', ErrorCondition: 'NotAllowed' },
        SaleData: existing.response?.SaleData ?? {},
        POIData: {},
      });
      return;
    }
    const p: SimulatedPayment = {
      serviceId,
      saleTransactionId: body.SaleData?.SaleTransactionID?.TransactionID ?? '',
      amount: body.PaymentTransaction?.AmountsReq?.RequestedAmount ?? 0,
      currency: body.PaymentTransaction?.AmountsReq?.Currency ?? '',
      stage: 'waiting_card',
      receivedAt: performance.now(),
      abortedTooLate: false,
      aborts: 0,
      abandoned: false,
      paymentType: (body as { PaymentData?: { PaymentType?: string } }).PaymentData?.PaymentType ?? 'Normal',
      header,
    };
    payments.set(serviceId, p);
    poke();
    const half = sim.mode === 'slow' ? sim.slowMs / 2 : 50;
    let sent = false;
    const answer = () => {
      if (sent) return;
      sent = true;
      respond(res, header, 'PaymentResponse', p.response);
    };
    (p as SimulatedPayment & { answer?: () => void }).answer = answer;
    res.on('close', () => {
      if (sent) return;
      p.abandoned = true;
      poke();
    });
    // `timeout` never ends (TransactionStatus says InProgress); `manual` waits for the test.
    if (sim.mode === 'timeout' || sim.mode === 'manual') return;
    after(half, () => {
      if (p.stage !== 'waiting_card') return;
      p.stage = 'authorizing';
      poke();
      if (sim.mode === 'drop') req.socket.destroy();
      after(half, () => {
        finish(p, sim.mode === 'decline' ? 'declined' : 'approved');
        answer();
      });
    });
  };

  const onAbort = (res: ServerResponse, body: ReferenceBody) => {
    const p = payments.get(body.MessageReference?.ServiceID ?? '');
    if (p) p.aborts++;
    poke();
    if (sim.mode === 'manual') {
      // recorded only: the test decides when and how the payment ends
    } else if (p?.stage === 'waiting_card') {
      finish(p, 'canceled');
      (p as SimulatedPayment & { answer?: () => void }).answer?.();
    } else if (p?.stage === 'authorizing') p.abortedTooLate = true;
    // Adyen answers an AbortRequest with an empty 200: the payment's own answer says what happened.
    res.writeHead(200);
    res.end();
  };

  const endReversal = (r: SimulatedReversal, outcome: 'approved' | 'declined') => {
    if (r.stage === 'done') return;
    r.stage = 'done';
    transactionSeq++;
    const base = {
      OriginalPOITransaction: { POITransactionID: { TransactionID: r.original } },
      POIData: { POITransactionID: { TransactionID: `SIM${String(transactionSeq).padStart(6, '0')}.${r.serviceId}`, TimeStamp: new Date().toISOString() } },
    };
    r.response =
      outcome === 'approved' ? { ...base, Response: { Result: 'Success' } } : { ...base, Response: { Result: 'Failure', ErrorCondition: 'Refusal' } };
    poke();
  };

  const onReversal = (req: IncomingMessage, res: ServerResponse, header: NexoHeader, body: ReversalBody) => {
    const original = body.OriginalPOITransaction?.POITransactionID?.TransactionID ?? '';
    const refuse = (condition: string) =>
      respond(res, header, 'ReversalResponse', {
        Response: { Result: 'Failure', ErrorCondition: condition },
        OriginalPOITransaction: { POITransactionID: { TransactionID: original } },
      });
    // A ServiceID is used once; a payment is reversed once; only an approved payment is reversed.
    if (reversals.has(header.ServiceID)) return refuse('NotAllowed');
    const paid = [...payments.values()].find(
      (p) => p.response?.Response.Result === 'Success' && p.response.POIData?.POITransactionID?.TransactionID === original,
    );
    const r: SimulatedReversal = {
      serviceId: header.ServiceID,
      saleTransactionId: body.SaleData?.SaleTransactionID?.TransactionID ?? '',
      original,
      originalAt: body.OriginalPOITransaction?.POITransactionID?.TimeStamp ?? '',
      stage: 'processing',
      receivedAt: performance.now(),
      abandoned: false,
      header,
    };
    if (!paid || sim.reversedCount(original) > 0) return refuse(paid ? 'NotAllowed' : 'NotFound');
    reversals.set(header.ServiceID, r);
    poke();
    let sent = false;
    const answer = () => {
      if (sent) return;
      sent = true;
      respond(res, header, 'ReversalResponse', r.response);
    };
    (r as SimulatedReversal & { answer?: () => void }).answer = answer;
    res.on('close', () => {
      if (sent) return;
      r.abandoned = true;
      poke();
    });
    if (sim.reversalMode === 'timeout') return;
    after(50, () => {
      if (sim.reversalMode === 'drop') req.socket.destroy();
      after(sim.reversalMode === 'drop' ? 50 : 0, () => {
        endReversal(r, sim.reversalMode === 'decline' ? 'declined' : 'approved');
        answer();
      });
    });
  };

  const onStatus = (res: ServerResponse, header: NexoHeader, body: ReferenceBody) => {
    const reversal = reversals.get(body.MessageReference?.ServiceID ?? '');
    if (reversal) {
      if (reversal.stage !== 'done')
        return respond(res, header, 'TransactionStatusResponse', { Response: { Result: 'Failure', ErrorCondition: 'InProgress' } });
      return respond(res, header, 'TransactionStatusResponse', {
        Response: { Result: 'Success' },
        MessageReference: { MessageCategory: 'Reversal', SaleID: reversal.header.SaleID, ServiceID: reversal.serviceId },
        RepeatedMessageResponse: {
          MessageHeader: { ...reversal.header, MessageType: 'Response' },
          RepeatedResponseMessageBody: { ReversalResponse: reversal.response },
        },
      });
    }
    const p = payments.get(body.MessageReference?.ServiceID ?? '');
    if (!p) return respond(res, header, 'TransactionStatusResponse', { Response: { Result: 'Failure', ErrorCondition: 'NotFound' } });
    if (p.stage !== 'done') return respond(res, header, 'TransactionStatusResponse', { Response: { Result: 'Failure', ErrorCondition: 'InProgress' } });
    respond(res, header, 'TransactionStatusResponse', {
      Response: { Result: 'Success' },
      MessageReference: { MessageCategory: 'Payment', SaleID: p.header.SaleID, ServiceID: p.serviceId },
      RepeatedMessageResponse: {
        MessageHeader: { ...p.header, MessageType: 'Response' },
        RepeatedResponseMessageBody: { PaymentResponse: p.response },
      },
    });
  };

  const server: Server = createServer({ key: opts.tls.key, cert: opts.tls.cert }, (req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (text += d));
    req.on('end', () => {
      let clear: Record<string, unknown>;
      try {
        clear = openNexo(JSON.parse(text), sim.mode === 'wrong_key' ? WRONG_KEY : opts.key);
      } catch (err) {
        sim.rejected++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            SaleToPOIResponse: {
              MessageHeader: { MessageClass: 'Event', MessageCategory: 'Event', MessageType: 'Notification', POIID: opts.poiid },
              EventNotification: {
                EventToNotify: 'Reject',
                EventDetails: `message=Crypto Error: ${(err as Error).message}`,
                TimeStamp: new Date().toISOString(),
              },
            },
          }),
        );
        return;
      }
      const msg = clear.SaleToPOIRequest as {
        MessageHeader: NexoHeader;
        PaymentRequest: PaymentBody;
        AbortRequest: ReferenceBody;
        TransactionStatusRequest: ReferenceBody;
        ReversalRequest: ReversalBody;
      };
      const header = msg.MessageHeader as NexoHeader;
      requests[header.MessageCategory] = (requests[header.MessageCategory] ?? 0) + 1;
      if (header.POIID !== opts.poiid) {
        res.writeHead(404);
        res.end();
        return;
      }
      switch (header.MessageCategory) {
        case 'Payment':
          return onPayment(req, res, header, msg.PaymentRequest);
        case 'Abort':
          return onAbort(res, msg.AbortRequest);
        case 'TransactionStatus':
          return onStatus(res, header, msg.TransactionStatusRequest);
        case 'Reversal':
          return onReversal(req, res, header, msg.ReversalRequest);
        case 'Diagnosis':
          return respond(res, header, 'DiagnosisResponse', { Response: { Result: 'Success' }, POIStatus: { GlobalStatus: 'OK' } });
        default:
          return respond(res, header, `${header.MessageCategory}Response`, { Response: { Result: 'Failure', ErrorCondition: 'NotAllowed' } });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', resolve));
  (sim as { port: number }).port = (server.address() as AddressInfo).port;
  return sim;
}
