#!/usr/bin/env node
/**
 * posd-nexo-sim: a simulated nexo terminal (Adyen's Terminal API, local) on the command line, for
 * demos: HTTPS with a demo CA it makes in --tls-dir, every message under NexoCrypto with the key
 * given. It prints how to register it with posd, then one JSON line per payment event.
 *   bin/posd-nexo-sim --poiid V400m-000000001 --key-identifier demo --passphrase-file key.txt --tls-dir ./nexo-demo
 *   bin/posd-nexo-sim ... --mode offline --forward-after 60000 --forward-outcome approved
 *     (approves offline; after a minute the processor is back and every payment it approved offline
 *     is forwarded with that outcome; `kill -USR2 <pid>` forwards them at once)
 * docs/terminals-nexo.md, "A simulated terminal for demos", walks through it.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { demoCertificates } from './nexo-certs.js';
import { NEXO_MODES, startNexoSimulator, type NexoMode, type SimulatedPayment } from './nexo-simulator.js';

const whole = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number');
  return n;
};

function line(event: string, data: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ at: new Date().toISOString(), event, ...data })}\n`);
}

function outcomeOf(p: SimulatedPayment): string {
  if (p.offline) return p.offline === 'stored' ? 'approved_offline' : `forwarded_${p.offline}`;
  const r = p.response?.Response;
  if (!r) return 'none';
  return r.Result === 'Success' ? 'approved' : r.ErrorCondition === 'Refusal' ? 'declined' : r.ErrorCondition === 'Aborted' ? 'canceled' : 'error';
}

export async function main(argv: string[]): Promise<void> {
  const program = new Command('posd-nexo-sim')
    .description('A simulated nexo terminal (Adyen Terminal API, local) for demos: HTTPS, NexoCrypto')
    .requiredOption('--poiid <id>', 'the terminal POIID, model-serial (e.g. V400m-000000001)')
    .requiredOption('--key-identifier <id>', 'the shared key identifier')
    .option('--key-version <n>', 'the shared key version', whole, 1)
    .requiredOption('--passphrase-file <path>', 'a file holding the shared key passphrase (its last newline ignored)')
    .requiredOption('--tls-dir <dir>', 'where its demo CA and certificate are made (kept and reused)')
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--port <n>', 'port to listen on', whole, 8443)
    .addOption(new Option('--mode <mode>', 'how it answers payments').choices(NEXO_MODES).default('approve'))
    .option('--slow-ms <ms>', 'slow: the card flow, half waiting for the card, half authorizing', whole, 4_000)
    .option('--forward-after <ms>', 'offline: forward every payment approved offline this long after it was', whole)
    .addOption(new Option('--forward-outcome <outcome>', 'offline: what the processor answers them').choices(['approved', 'declined']).default('approved'))
    .parse(argv);
  const o = program.opts<{
    poiid: string;
    keyIdentifier: string;
    keyVersion: number;
    passphraseFile: string;
    tlsDir: string;
    host: string;
    port: number;
    mode: NexoMode;
    slowMs: number;
    forwardAfter?: number;
    forwardOutcome: 'approved' | 'declined';
  }>();
  if (o.mode === 'manual') program.error('posd-nexo-sim: manual mode is driven by a test, not from here');
  const passphrase = readFileSync(o.passphraseFile, 'utf8').replace(/\r?\n$/, '');
  const certs = await demoCertificates(resolve(o.tlsDir), o.poiid);
  const sim = await startNexoSimulator({
    key: { keyIdentifier: o.keyIdentifier, passphrase, keyVersion: o.keyVersion },
    tls: { key: certs.key, cert: certs.cert },
    poiid: o.poiid,
    mode: o.mode,
    slowMs: o.slowMs,
    host: o.host,
    port: o.port,
  });
  const passFile = resolve(o.passphraseFile);
  process.stdout.write(
    [
      `posd-nexo-sim: nexo terminal ${o.poiid} listening on https://${o.host}:${sim.port}/nexo, mode ${o.mode}`,
      `  its CA (${certs.created ? 'made now' : 'reused'}): ${certs.caFile}`,
      'To drive it from posd:',
      `  1. trust its CA: terminals.nexo_ca_file = ${certs.caFile}`,
      `     (in the JSON settings file, or POSD_TERMINALS_NEXO_CA_FILE=${certs.caFile} in posd's environment)`,
      '  2. register it (the account: posd init printed it; the daemon picks it up within 5 s):',
      `     posd terminals add --account <account id> --name "Demo terminal" --kind nexo --address ${o.host} --port ${sim.port} \\`,
      `       --poiid ${o.poiid} --key-identifier ${o.keyIdentifier} --key-version ${o.keyVersion} --passphrase-file ${passFile}`,
      '',
    ].join('\n'),
  );

  // The simulator keeps its payments in a map; their changes are reported as they are seen.
  const seen = new Map<string, string>();
  const report = () => {
    for (const p of sim.payments.values()) {
      const state = `${p.stage}/${outcomeOf(p)}`;
      if (seen.get(p.serviceId) === state) continue;
      seen.set(p.serviceId, state);
      line(p.stage === 'done' ? 'payment_done' : `payment_${p.stage}`, {
        sale_transaction_id: p.saleTransactionId,
        amount: p.amount,
        currency: p.currency,
        ...(p.stage === 'done' ? { outcome: outcomeOf(p) } : {}),
      });
    }
  };
  const watch = setInterval(report, 100);
  const forwardAll = () => {
    for (const p of sim.payments.values()) if (p.offline === 'stored') sim.forward(p.saleTransactionId, o.forwardOutcome);
    report();
  };
  let forwardTimer: NodeJS.Timeout | undefined;
  if (o.mode === 'offline') {
    process.on('SIGUSR2', forwardAll);
    if (o.forwardAfter !== undefined) {
      // Each payment approved offline is forwarded `forwardAfter` after it was approved.
      const since = new Map<string, number>();
      forwardTimer = setInterval(() => {
        for (const p of sim.payments.values()) {
          if (p.offline !== 'stored') continue;
          const at = since.get(p.serviceId) ?? Date.now();
          since.set(p.serviceId, at);
          if (Date.now() - at >= o.forwardAfter!) sim.forward(p.saleTransactionId, o.forwardOutcome);
        }
      }, 100);
    }
  }
  const stop = () => {
    clearInterval(watch);
    clearInterval(forwardTimer);
    void sim.close().finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

await main(process.argv);
