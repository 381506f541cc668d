/**
 * A terminal driven step by step from a test, over the real links of devices/ (a WebSocket to
 * /terminals/link, or a serial port on a pty). Unlike the simulator it does nothing on its own:
 * every ack, progress and result is sent by the test, so races are written out exactly.
 */
import {
  connectWebSocketLink,
  openSerialPort,
  PROTOCOL_VERSION,
  terminalLinkFromPort,
  type Clock,
  type PortStream,
  type ResultBody,
  type ServerMessage,
  type TerminalMessage,
  type TerminalSideLink,
} from '../../../devices/index.js';

type Of<T extends ServerMessage['type']> = Extract<ServerMessage, { type: T }>;

export class ScriptedTerminal {
  readonly received: ServerMessage[] = [];
  private cursor = new Set<ServerMessage>();
  private waiters: Array<() => void> = [];

  constructor(
    readonly link: TerminalSideLink,
    readonly terminalId: string,
    readonly token: string,
  ) {
    link.on('message', (m) => {
      this.received.push(m);
      for (const w of this.waiters.splice(0)) w();
    });
    link.on('down', () => {
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** The next not-yet-taken message of this type (already received or still to come). */
  async next<T extends ServerMessage['type']>(type: T, pred: (m: Of<T>) => boolean = () => true): Promise<Of<T>> {
    for (;;) {
      const found = this.received.find((m) => m.type === type && !this.cursor.has(m) && pred(m as Of<T>));
      if (found) {
        this.cursor.add(found);
        return found as Of<T>;
      }
      if (this.link.isDown) throw new Error(`link down while waiting for ${type}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  count(type: ServerMessage['type'], commandId?: string): number {
    return this.received.filter((m) => m.type === type && (!commandId || (m as { command_id?: string }).command_id === commandId)).length;
  }

  send(msg: TerminalMessage): Promise<void> {
    return this.link.send(msg);
  }

  async hello(opts: { current_command_id?: string | null; unacknowledged_results?: ResultBody[]; token?: string; protocol?: number } = {}) {
    const answer = Promise.race([this.next('welcome'), this.next('error')]);
    await this.send({
      type: 'hello',
      terminal_id: this.terminalId,
      token: opts.token ?? this.token,
      model: 'scripted-1',
      firmware: '2.3.4',
      protocol: opts.protocol ?? PROTOCOL_VERSION,
      current_command_id: opts.current_command_id ?? null,
      unacknowledged_results: opts.unacknowledged_results ?? [],
    });
    return answer;
  }

  ack(commandId: string) {
    return this.send({ type: 'ack', command_id: commandId });
  }

  progress(commandId: string, stage: 'waiting_card' | 'reading' | 'authorizing') {
    return this.send({ type: 'progress', command_id: commandId, stage });
  }

  result(commandId: string, outcome: 'approved' | 'declined' | 'canceled' | 'error' | 'stored', extra: Partial<ResultBody> = {}) {
    return this.send({ type: 'result', ...approvedDetails(outcome), ...extra, command_id: commandId, outcome });
  }

  /** Protocol 2: what became of a stored payment at the processor. */
  forward(commandId: string, reference: string, outcome: 'forwarded' | 'approved' | 'declined' | 'expired', extra: Record<string, unknown> = {}) {
    return this.send({
      type: 'forward_result',
      command_id: commandId,
      offline_reference: reference,
      outcome,
      authorization_code: outcome === 'approved' ? 'OFF123' : null,
      card: { network: 'visa', last4: '4242' },
      processor_reference: outcome === 'forwarded' ? null : `proc-${reference}`,
      reason: outcome === 'declined' ? 'insufficient_funds' : null,
      ...extra,
    });
  }

  close() {
    return this.link.close('test done');
  }
}

export function approvedDetails(outcome: string): Omit<ResultBody, 'command_id' | 'outcome'> {
  return outcome === 'approved'
    ? { authorization_code: 'A1B2C3', card: { network: 'visa', last4: '4242' }, processor_reference: 'proc_123', reason: null }
    : { authorization_code: null, card: null, processor_reference: null, reason: outcome === 'declined' ? 'insufficient_funds' : null };
}

export async function connectWsTerminal(baseUrl: string, terminalId: string, token: string, clock?: Clock): Promise<ScriptedTerminal> {
  const link = await connectWebSocketLink(`${baseUrl.replace(/^http/, 'ws')}/terminals/link`, { clock, pingIntervalMs: 0 });
  return new ScriptedTerminal(link, terminalId, token);
}

export async function openSerialTerminal(
  path: string,
  terminalId: string,
  token: string,
  opts: { clock?: Clock; wrap?: (port: PortStream) => PortStream } = {},
): Promise<ScriptedTerminal> {
  const port = await openSerialPort({ path });
  const link = terminalLinkFromPort(opts.wrap ? opts.wrap(port) : port, { clock: opts.clock, pingIntervalMs: 0, ackTimeoutMs: 1_000 });
  return new ScriptedTerminal(link, terminalId, token);
}
