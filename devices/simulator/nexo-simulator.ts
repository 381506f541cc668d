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
 */
import { createServer, type Server } from 'node:https';
import { performance } from 'node:perf_hooks';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { openNexo, sealNexo, type NexoKey } from '../nexo/crypto.js';
import type { NexoHeader, NexoPaymentResponse } from '../nexo/messages.js';

export const NEXO_MODES = ['approve', 'decline', 'slow', 'timeout', 'drop', 'wrong_key', 'manual', 'offline'] as const;
export type NexoMode = (typeof NEXO_MODES)[number];

export interface NexoSimulatorOptions {
  key: NexoKey;
  /** PEM key and certificate the terminal presents (its CN starts with the POIID). */
  tls: { key: string | Buffer; cert: string | Buffer };
  poiid: string;
  mode?: NexoMode;
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
  response?: NexoPaymentResponse;
  header: NexoHeader;
  /** `offline` mode: approved offline (`stored`), then what the processor answered when forwarded. */
  offline?: 'stored' | 'approved' | 'declined';
}

export interface NexoSimulator {
  readonly port: number;
  mode: NexoMode;
  /** `slow`'s card flow, ms: the first half waiting for the card, the second authorizing. */
  slowMs: number;
  /** Messages it could not open (another key): each answered with a clear Reject. */
  rejected: number;
  /** Every payment received, by ServiceID, in order. */
  readonly payments: Map<string, SimulatedPayment>;
  /** Requests received, by nexo category (Payment, Abort, TransactionStatus, Diagnosis). */
  readonly requests: Record<string, number>;
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
interface ReferenceBody {
  MessageReference?: { ServiceID?: string };
}

const WRONG_KEY: NexoKey = { keyIdentifier: 'other', passphrase: 'not the shared one', keyVersion: 1 };

export async function startNexoSimulator(opts: NexoSimulatorOptions): Promise<NexoSimulator> {
  const payments = new Map<string, SimulatedPayment>();
  const requests: Record<string, number> = {};
  const waiters: Array<() => void> = [];
  const timers = new Set<NodeJS.Timeout>();
  const poke = () => waiters.splice(0).forEach((w) => w());
  let transactionSeq = 0;

  const sim: NexoSimulator = {
    port: 0,
    mode: opts.mode ?? 'approve',
    slowMs: opts.slowMs ?? 4_000,
    rejected: 0,
    payments,
    requests,
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

  const onStatus = (res: ServerResponse, header: NexoHeader, body: ReferenceBody) => {
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
