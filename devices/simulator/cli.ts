#!/usr/bin/env node
/**
 * posd-sim: a simulated card terminal on the command line, for demos and manual testing.
 *   node dist/devices/simulator/cli.js --url ws://127.0.0.1:4242/terminals/link --terminal-id T1 --token s3cret
 *   node dist/devices/simulator/cli.js --url wss://192.168.1.20:4242/terminals/link --ca data/tls/ca.pem --terminal-id T1 --token s3cret
 *     (a box off loopback speaks TLS: trust its CA, the file `posd tls ca` names, or
 *     --ca-fingerprint with the SHA-256 it prints instead of the file)
 *   node dist/devices/simulator/cli.js --serial /dev/pts/3 --terminal-id T1 --token s3cret --behaviour slow
 *   node dist/devices/simulator/cli.js --url ... --protocol 2 --offline --forward-after 60000 --forward-outcomes approved,declined
 *     (stores charges while offline, then after a minute regains its processor and forwards them,
 *     the outcomes taken in turn from the list; `kill -USR2 <pid>` regains it at once)
 * Prints one JSON line per event on stdout so scripts can follow it.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { BEHAVIOURS, type BehaviourName } from './behaviours.js';
import { serialConnector, webSocketConnector, type Connector } from './connectors.js';
import { caByFingerprint } from '../websocket/pin.js';
import { TerminalSimulator, type ForwardDecision } from './simulator.js';

const DECISIONS: readonly ForwardDecision[] = ['approved', 'declined', 'expired'];
const decisions = (v: string): ForwardDecision[] => {
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const d of list) if (!DECISIONS.includes(d as ForwardDecision)) throw new InvalidArgumentError(`expected ${DECISIONS.join(', ')}`);
  return list as ForwardDecision[];
};

const ms = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected milliseconds (a whole number)');
  return n;
};

function replacer(key: string, value: unknown) {
  if (key === 'token' && typeof value === 'string') return '***';
  return value instanceof Error ? { message: value.message } : value;
}

export async function main(argv: string[]): Promise<void> {
  const program = new Command('posd-sim')
    .description('A simulated card terminal speaking the posd terminal link protocol v1 or v2')
    .addOption(new Option('--url <url>', 'WebSocket URL, e.g. ws://127.0.0.1:4242/terminals/link').conflicts('serial'))
    .addOption(new Option('--serial <path>', 'serial port path, e.g. /dev/pts/3'))
    .option('--ca <file>', 'for a wss:// URL: the CA certificate (PEM) to trust, e.g. the box CA `posd tls ca` names')
    .addOption(
      new Option(
        '--ca-fingerprint <sha256>',
        "for a wss:// URL: the box CA's SHA-256 fingerprint (posd tls ca): its certificate, read from the box, is the only one trusted",
      ).conflicts('ca'),
    )
    .option('--baud-rate <n>', 'serial baud rate', ms, 115_200)
    .requiredOption('--terminal-id <id>', 'terminal id announced in hello')
    .requiredOption('--token <token>', 'terminal token announced in hello')
    .addOption(new Option('--behaviour <name>', 'how to answer charges').choices(BEHAVIOURS).default('approve'))
    .option('--delay-waiting-card <ms>', 'time spent waiting for the card', ms)
    .option('--delay-reading <ms>', 'time spent reading the card', ms)
    .option('--delay-authorizing <ms>', 'time spent authorizing', ms)
    .option('--reconnect-delay <ms>', 'pause before reconnecting', ms, 1_000)
    .option('--protocol <n>', 'protocol version announced in hello (1 or 2)', ms, 1)
    .option('--offline', 'version 2: no processor; store the charges the offline policy allows', false)
    .option('--forward-after <ms>', 'with --offline: regain the processor after this long and forward every stored payment', ms)
    .option('--forward-outcomes <list>', 'what the processor answers each forwarded payment, in turn', decisions, ['approved'] as ForwardDecision[])
    .option('--forward-twice', 'send each forward result twice (posd must apply it once)', false)
    .parse(argv);
  const o = program.opts<{
    url?: string;
    serial?: string;
    ca?: string;
    caFingerprint?: string;
    baudRate: number;
    terminalId: string;
    token: string;
    behaviour: BehaviourName;
    delayWaitingCard?: number;
    delayReading?: number;
    delayAuthorizing?: number;
    reconnectDelay: number;
    protocol: number;
    offline: boolean;
    forwardAfter?: number;
    forwardOutcomes: ForwardDecision[];
    forwardTwice: boolean;
  }>();
  const connect: Connector = o.url
    ? webSocketConnector(
        o.url,
        o.ca
          ? { ca: readFileSync(o.ca) }
          : o.caFingerprint
            ? { ca: await caByFingerprint(o.url, o.caFingerprint).catch((err: Error) => program.error(`posd-sim: ${err.message}`)) }
            : {},
      )
    : o.serial
      ? serialConnector(o.serial, { baudRate: o.baudRate })
      : program.error('one of --url or --serial is required');

  const delays = Object.fromEntries(
    Object.entries({ waiting_card: o.delayWaitingCard, reading: o.delayReading, authorizing: o.delayAuthorizing }).filter(([, v]) => v !== undefined),
  );
  const sim = new TerminalSimulator({
    terminalId: o.terminalId,
    token: o.token,
    behaviour: o.behaviour,
    delays,
    connect,
    reconnectDelayMs: o.reconnectDelay,
    protocol: o.protocol,
    offline: o.offline,
  });
  let turn = 0;
  const regainProcessor = () => {
    sim.setOffline(false);
    void sim
      .forward(() => o.forwardOutcomes[turn++ % o.forwardOutcomes.length], { twice: o.forwardTwice })
      .then(
        () => process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), terminal_id: o.terminalId, event: 'forwarded_all', data: null })}\n`),
        () => {},
      );
  };
  if (o.offline && o.forwardAfter !== undefined) setTimeout(regainProcessor, o.forwardAfter);
  // With --offline: SIGUSR2 gives the processor back now (scripts and tests decide when the outage ends).
  if (o.offline) process.on('SIGUSR2', regainProcessor);
  sim.on('event', ({ event, data }) => {
    const line = { at: new Date().toISOString(), terminal_id: o.terminalId, event, data };
    process.stdout.write(`${JSON.stringify(line, replacer)}\n`);
  });

  let stopping = false;
  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    void sim.stop().finally(() => process.exit(code));
  };
  process.once('SIGINT', () => stop(0));
  process.once('SIGTERM', () => stop(0));
  // Bad credentials will not get better by retrying: exit non-zero so scripts notice.
  sim.once('rejected', () => stop(2));
  // Keep the event loop alive: the simulator's timers are unref'd so tests never hang on them.
  setInterval(() => {}, 1 << 30);
  await sim.start().catch(() => {});
}

await main(process.argv);
