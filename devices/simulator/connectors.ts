/** How a simulator reaches posd: each call opens a fresh terminal-side link. */
import type { TerminalSideLink } from '../link.js';
import { connectWebSocketLink, type ConnectLinkOptions } from '../websocket/ws-link.js';
import { openSerialPort, type PortOpener } from '../serial/port-opener.js';
import { terminalLinkFromPort, type SerialTimingOptions } from '../serial/serial-link.js';

export type Connector = () => Promise<TerminalSideLink>;

export function webSocketConnector(url: string, opts: ConnectLinkOptions = {}): Connector {
  return () => connectWebSocketLink(url, opts);
}

export function serialConnector(path: string, opts: SerialTimingOptions & { baudRate?: number; open?: PortOpener } = {}): Connector {
  return async () => {
    const port = await (opts.open ?? openSerialPort)({ path, baudRate: opts.baudRate });
    return terminalLinkFromPort(port, opts);
  };
}
