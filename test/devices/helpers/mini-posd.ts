/**
 * A stand-in for posd's terminal bridge, just enough to drive a simulator end to end: it answers
 * hello (again on serial, where a restarted terminal says hello on the same link), records every
 * message and acknowledges results. Deliberately not src/: the driver layer is tested alone.
 */
import { EventEmitter } from 'node:events';
import {
  answerHello,
  type Hello,
  type LinkInvalid,
  type ResultBody,
  type ServerLink,
  type ServerMessage,
  type TerminalMessage,
} from '../../../devices/index.js';

export class MiniPosd extends EventEmitter {
  readonly log: TerminalMessage[] = [];
  readonly invalid: LinkInvalid[] = [];
  readonly hellos: Hello[] = [];
  /** Results learnt, from `result` messages or from hello's unacknowledged_results. */
  readonly results: ResultBody[] = [];
  link: ServerLink | undefined;

  constructor(private readonly token = 'good') {
    super();
  }

  attach(link: ServerLink): void {
    link.on('invalid', (i) => this.invalid.push(i));
    link.on('message', (m) => void this.onMessage(link, m));
  }

  private async onMessage(link: ServerLink, m: TerminalMessage): Promise<void> {
    this.log.push(m);
    if (m.type === 'hello') {
      try {
        await answerHello(link, m, { verify: (h) => h.token === this.token });
      } catch {
        this.emit('refused', m);
        return;
      }
      this.link = link;
      this.hellos.push(m);
      for (const r of m.unacknowledged_results) await this.takeResult(link, r);
      this.emit('hello', m);
      return;
    }
    if (m.type === 'result') await this.takeResult(link, m);
    this.emit(m.type, m);
  }

  private async takeResult(link: ServerLink, r: ResultBody): Promise<void> {
    // A real bridge commits first; recording it is our "commit".
    this.results.push(r);
    await link.send({ type: 'result_ack', command_id: r.command_id }).catch(() => {});
  }

  send(msg: ServerMessage): Promise<void> {
    if (!this.link) throw new Error('no terminal connected');
    return this.link.send(msg);
  }

  /** The next message of `type` (from now on) that satisfies `pred`. */
  waitFor<T extends TerminalMessage['type']>(
    type: T,
    pred: (m: Extract<TerminalMessage, { type: T }>) => boolean = () => true,
  ): Promise<Extract<TerminalMessage, { type: T }>> {
    return new Promise((resolve) => {
      const on = (m: Extract<TerminalMessage, { type: T }>) => {
        if (!pred(m)) return;
        this.off(type, on);
        resolve(m);
      };
      this.on(type, on);
    });
  }
}

export const charge = (command_id: string, amount_in_cents = 1234): ServerMessage => ({
  type: 'charge',
  command_id,
  amount_in_cents,
  currency: 'EUR',
  installments: 1,
  description: 'coffee',
  print_receipt: false,
  show_post_payment_screens: false,
  tax_id: null,
});
