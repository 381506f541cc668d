import { startTestServer, type TestServer } from '../../helpers/server.js';
import { bridgeOf } from '../../../src/modules/terminals/link/index.js';
import type { Clock, PortStream, TerminalMessage } from '../../../devices/index.js';
import { connectWsTerminal, openSerialTerminal, type ScriptedTerminal } from './scripted-terminal.js';
import { openPtyPair, type PtyPair } from '../../devices/helpers/pty-pair.js';

export type Transport = 'websocket' | 'serial';

export interface Harness {
  server: TestServer;
  terminalId: string;
  token: string;
  /** A connected terminal that has said hello and was welcomed. */
  terminal: ScriptedTerminal;
  /** Opens a new link for the same terminal (a reconnect); it has not said hello yet. */
  reconnect(): Promise<ScriptedTerminal>;
  /** Resolves once posd has fully handled a message from the terminal that matches. */
  handled(pred: (m: TerminalMessage) => boolean): Promise<TerminalMessage>;
  charge(body?: Record<string, unknown>): Promise<{ status: number; body: any }>;
  get(id: string): Promise<any>;
  stop(): Promise<void>;
}

/** Config that keeps the suite fast: no keepalive noise, short handshakes and serial resends. */
export const FAST_TERMINALS = {
  ping_interval_ms: 0,
  hello_timeout_ms: 5_000,
  serial_ack_timeout_ms: 1_000,
  serial_reopen_max_ms: 200,
};

let externalSeq = 0;

export interface HarnessOptions {
  clock?: Clock;
  terminals?: Record<string, unknown>;
  /** The terminal side's own link: its clock and (serial) a wrapper around its port. */
  terminalLink?: { clock?: Clock; wrap?: (port: PortStream) => PortStream };
  /** The protocol version the first terminal announces (1 unless said). */
  protocol?: number;
  /** More config sections (say, `sync`), beside the terminals' own. */
  config?: Record<string, unknown>;
}

export async function startHarness(transport: Transport, opts: HarnessOptions = {}): Promise<Harness> {
  const server = await startTestServer({
    clock: opts.clock,
    config: { ...opts.config, terminals: { ...FAST_TERMINALS, ...opts.terminals }, limits: { per_key_per_second: 100_000 } },
  });
  let pty: PtyPair | undefined;
  const body: Record<string, unknown> = { name: `Counter ${transport}` };
  if (transport === 'serial') {
    pty = await openPtyPair();
    Object.assign(body, { transport: 'serial', serial_path: pty.a, baud_rate: 115200 });
  }
  const created = await server.api('POST', '/terminals', { body });
  if (created.status !== 201) throw new Error(`terminal not created: ${created.status} ${created.text}`);
  const terminalId: string = created.body.id;
  const token: string = created.body.pairing_token;
  const bridge = bridgeOf(server.daemon.ctx);
  const open = () =>
    transport === 'websocket'
      ? connectWsTerminal(server.url, terminalId, token, opts.terminalLink?.clock ?? opts.clock)
      : openSerialTerminal(pty!.b, terminalId, token, { clock: opts.terminalLink?.clock ?? opts.clock, wrap: opts.terminalLink?.wrap });
  const links: ScriptedTerminal[] = [];
  const reconnect = async () => {
    const t = await open();
    links.push(t);
    return t;
  };
  const terminal = await reconnect();
  const attached = new Promise<void>((r) => bridge.events.once('attached', () => r()));
  const welcome = await terminal.hello({ protocol: opts.protocol });
  if (welcome.type !== 'welcome') throw new Error(`hello refused: ${JSON.stringify(welcome)}`);
  await attached;
  return {
    server,
    terminalId,
    token,
    terminal,
    reconnect,
    handled(pred) {
      return new Promise((resolve) => {
        const on = (_id: string, m: TerminalMessage) => {
          if (!pred(m)) return;
          bridge.events.off('handled', on);
          resolve(m);
        };
        bridge.events.on('handled', on);
      });
    },
    async charge(extra = {}) {
      const res = await server.api('POST', '/terminal_session_commands', {
        body: { terminal_id: terminalId, external_id: `ext-${++externalSeq}`, amount_in_cents: 1500, currency: 'GTQ', ...extra },
      });
      return { status: res.status, body: res.body };
    },
    async get(id: string) {
      const res = await server.api('GET', `/terminal_session_commands/${id}`);
      if (res.status !== 200) throw new Error(`GET ${id}: ${res.status}`);
      return res.body;
    },
    async stop() {
      for (const l of links) await l.close().catch(() => {});
      await server.stop();
      await pty?.kill();
    },
  };
}
