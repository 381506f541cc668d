import type { AppContext } from '../../../context.js';
import { awaitHello, type Clock as Scheduler, type HandshakeError, type Hello, type LinkInvalid, type ServerLink } from '../../../../devices/index.js';
import { authenticateTerminal, terminalRow } from '../service.js';
import { logMalformed, watchFlood } from './budget.js';

/**
 * The hello handshake on a fresh link (bridge.ts attaches what it accepts): the terminal must name
 * itself with its token, over the transport it was registered for, and on a serial port the
 * terminal that port is pinned to (`expectedTerminalId`).
 */
export function awaitTerminalHello(
  ctx: AppContext,
  scheduler: Scheduler,
  link: ServerLink,
  expectedTerminalId: string | undefined,
  accepted: (hello: Hello) => void,
): void {
  const onInvalid = (i: LinkInvalid) => logMalformed(ctx, link, undefined, i);
  link.on('invalid', onInvalid);
  watchFlood(ctx, link, expectedTerminalId);
  awaitHello(link, {
    clock: scheduler,
    timeoutMs: ctx.config.terminals.hello_timeout_ms,
    verify: (hello) => verifyHello(ctx, link, hello, expectedTerminalId),
  }).then(
    (hello) => {
      link.off('invalid', onInvalid);
      accepted(hello);
    },
    (err: HandshakeError) => {
      link.off('invalid', onInvalid);
      ctx.log.warn({ terminal_id: err.terminalId, transport: link.transport, reason: err.message }, 'terminal handshake refused');
    },
  );
}

/** The hello names a registered terminal, with its token, over its own transport (and port). */
export function verifyHello(ctx: AppContext, link: ServerLink, hello: Hello, expectedTerminalId: string | undefined): boolean {
  if (expectedTerminalId && hello.terminal_id !== expectedTerminalId) return false;
  if (link.transport === 'nexo') {
    // posd opened this link itself, to the registered terminal, and every answer on it was opened
    // with that terminal's key: no token to present, but it must be pinned to its terminal.
    const row = expectedTerminalId ? terminalRow(ctx, expectedTerminalId) : undefined;
    return !!row && !row.retired_at && row.transport === 'nexo';
  }
  const row = authenticateTerminal(ctx, hello.terminal_id, hello.token);
  return !!row && row.transport === link.transport;
}
