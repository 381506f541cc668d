/**
 * The hello handshake as posd runs it. The daemon supplies `verify` (the token check against its
 * terminal registry); this module owns the protocol part: answer `welcome` or `error` and close.
 */
import { realClock, type Clock } from './clock.js';
import type { ServerLink } from './link.js';
import { LATEST_PROTOCOL_VERSION, negotiateProtocol, PROTOCOL_VERSION, type Hello, type TerminalMessage } from './protocol/messages.js';

export type HandshakeErrorFlags = {
  timeout?: true;
  unauthorized?: true;
  unsupportedProtocol?: true;
  /** The terminal sent something other than hello first. */
  notHello?: true;
  linkDown?: true;
};

export class HandshakeError extends Error {
  readonly timeout?: true;
  readonly unauthorized?: true;
  readonly unsupportedProtocol?: true;
  readonly notHello?: true;
  readonly linkDown?: true;
  constructor(
    message: string,
    flags: HandshakeErrorFlags,
    readonly terminalId?: string,
  ) {
    super(message);
    this.name = 'HandshakeError';
    Object.assign(this, flags);
  }
}

export interface AnswerHelloOptions {
  verify: (hello: Hello) => boolean | Promise<boolean>;
  clock?: Clock;
}

export interface AwaitHelloOptions extends AnswerHelloOptions {
  /** How long a fresh link may stay silent before it is closed; 10 s by default. */
  timeoutMs?: number;
}

/** Error codes posd sends in `error` during the handshake. */
export const HANDSHAKE_ERROR_CODES = ['unauthorized', 'unsupported_protocol', 'hello_required', 'hello_timeout'] as const;

async function refuse(link: ServerLink, code: (typeof HANDSHAKE_ERROR_CODES)[number], message: string): Promise<void> {
  // Best effort: the terminal may already be gone, and the link closes either way.
  await link.send({ type: 'error', code, message }).catch(() => {});
  await link.close(`handshake refused: ${code}`);
}

/** The version a session runs at, from the hello that opened it (the handshake accepted it). */
export function sessionProtocol(hello: Pick<Hello, 'protocol'>): number {
  return negotiateProtocol(hello.protocol) ?? PROTOCOL_VERSION;
}

/**
 * Answers one hello: `welcome` when it is acceptable, otherwise `error` then close. Exposed apart
 * from awaitHello because on a serial line a terminal that restarts says hello again on the same
 * link, and the daemon must check it again.
 */
export async function answerHello(link: ServerLink, hello: Hello, opts: AnswerHelloOptions): Promise<Hello> {
  const clock = opts.clock ?? realClock();
  const version = negotiateProtocol(hello.protocol);
  if (version === null) {
    await refuse(link, 'unsupported_protocol', `posd speaks protocols ${PROTOCOL_VERSION} to ${LATEST_PROTOCOL_VERSION}`);
    throw new HandshakeError(`protocol ${hello.protocol} unsupported`, { unsupportedProtocol: true }, hello.terminal_id);
  }
  let ok = false;
  try {
    ok = await opts.verify(hello);
  } catch {
    ok = false; // a failing registry lookup must not let a terminal in
  }
  if (!ok) {
    await refuse(link, 'unauthorized', 'unknown terminal or bad token');
    throw new HandshakeError('terminal not authorized', { unauthorized: true }, hello.terminal_id);
  }
  try {
    const serverTime = new Date(clock.now()).toISOString();
    // A version-1 welcome stays exactly what version-1 terminals were built against.
    await link.send(version >= 2 ? { type: 'welcome', server_time: serverTime, protocol: version } : { type: 'welcome', server_time: serverTime });
  } catch {
    throw new HandshakeError('link went down during handshake', { linkDown: true }, hello.terminal_id);
  }
  return hello;
}

/** Waits for the first message on a fresh link, which must be an acceptable hello. */
export function awaitHello(link: ServerLink, opts: AwaitHelloOptions): Promise<Hello> {
  const clock = opts.clock ?? realClock();
  return new Promise<Hello>((resolve, reject) => {
    const cleanup = () => {
      clock.clearTimeout(timer);
      link.off('message', onMessage);
      link.off('down', onDown);
    };
    const onMessage = (msg: TerminalMessage) => {
      cleanup();
      if (msg.type !== 'hello') {
        void refuse(link, 'hello_required', `expected hello, got ${msg.type}`);
        reject(new HandshakeError(`expected hello, got ${msg.type}`, { notHello: true }));
        return;
      }
      answerHello(link, msg, { ...opts, clock }).then(resolve, reject);
    };
    const onDown = () => {
      cleanup();
      reject(new HandshakeError('link went down before hello', { linkDown: true }));
    };
    const timer = clock.setTimeout(() => {
      cleanup();
      void refuse(link, 'hello_timeout', 'no hello received');
      reject(new HandshakeError('no hello before timeout', { timeout: true }));
    }, opts.timeoutMs ?? 10_000);
    if (link.isDown) return onDown();
    link.on('message', onMessage);
    link.on('down', onDown);
  });
}
