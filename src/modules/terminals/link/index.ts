import { WebSocketServer } from 'ws';
import type { ApiApp, Worker } from '../../../api/module.js';
import type { AppContext } from '../../../context.js';
import { MAX_MESSAGE_BYTES, type PortOpener } from '../../../../devices/index.js';
import { TerminalBridge } from './bridge.js';
import { SerialPorts } from './serial-ports.js';
import { NexoTerminals } from './nexo-terminals.js';

export { TerminalBridge } from './bridge.js';

export const TERMINAL_LINK_PATH = '/terminals/link';

interface Bridging {
  bridge: TerminalBridge;
  serial: SerialPorts;
  nexo: NexoTerminals;
}

const bridges = new WeakMap<AppContext, Bridging>();

/** Tests may hand a serial port opener (say, the mock binding) before the daemon starts. */
const openers = new WeakMap<AppContext, PortOpener>();
export function useSerialOpener(ctx: AppContext, open: PortOpener): void {
  openers.set(ctx, open);
}

/** The one bridge of a running daemon. */
export function bridgeOf(ctx: AppContext): TerminalBridge {
  return bridging(ctx).bridge;
}

function bridging(ctx: AppContext): Bridging {
  let b = bridges.get(ctx);
  if (!b) {
    // Timers follow the injected clock, so dispatch timeouts are tested by moving time, not by sleeping.
    const bridge = new TerminalBridge(ctx, ctx.clock);
    b = { bridge, serial: new SerialPorts(ctx, bridge, ctx.clock, openers.get(ctx)), nexo: new NexoTerminals(ctx, bridge, ctx.clock) };
    bridges.set(ctx, b);
  }
  return b;
}

/** `/terminals/link`: WebSocket terminals connect here (outside /api: they authenticate with hello). */
export function registerTerminalLink(app: ApiApp, ctx: AppContext): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES * 2 });
  const { bridge } = bridging(ctx);
  // Started here, before listen: a terminal connecting at once must not be marked unavailable after.
  bridge.start();
  app.server.on('upgrade', (req, socket, head) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== TERMINAL_LINK_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => bridge.acceptWebSocket(ws));
  });
  // Upgraded sockets are not the HTTP server's to close: end the links before it waits on them.
  app.addHook('preClose', async () => {
    await bridge.stop();
    for (const ws of wss.clients) ws.terminate();
    wss.close();
  });
}

export function terminalWorkers(ctx: AppContext): Worker[] {
  return [
    {
      name: 'terminal-bridge',
      start: () => {
        bridging(ctx).serial.start();
        bridging(ctx).nexo.start();
      },
      stop: async () => {
        const b = bridging(ctx);
        await b.serial.stop();
        await b.nexo.stop();
        await b.bridge.stop();
      },
    },
  ];
}
