import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { Command } from 'commander';
import { CliError, cliConfig, printJson, withDataOptions, type DataOptions } from './common.js';
import { databaseFile } from '../db/paths.js';
import { SecretBox } from '../system/secret-box.js';
import type { CaInfo } from '../system/tls/box-pki.js';
import type { Config } from '../config.js';

/** The box CA of this data folder, made when missing (a box initialised before posd had one). */
export async function boxCa(config: Config): Promise<CaInfo> {
  const { BoxPki } = await import('../system/tls/box-pki.js');
  return new BoxPki(config, SecretBox.fromConfig(config), Date.now).ensureCa();
}

/** The lines `posd init` and `posd tls ca` print: what a till or terminal pins or installs. */
export function caLines(ca: CaInfo): string[] {
  return [
    `  TLS CA        ${ca.file}`,
    `  fingerprint   SHA-256 ${ca.fingerprint}`,
    '  Tills and terminals trust this file (or pin this fingerprint) to reach the box over HTTPS.',
  ];
}

export function tlsCommand(): Command {
  const cmd = new Command('tls').description("the box's TLS certificate authority (docs/security.md, TLS)");
  cmd.addCommand(
    withDataOptions(new Command('ca'))
      .description("print the box CA's PEM file and SHA-256 fingerprint (what tills and terminals trust)")
      .option('--json', 'print {file, fingerprint} as JSON')
      .option('--pem', 'print the CA certificate itself')
      .action(async (opts: DataOptions & { json?: boolean; pem?: boolean }) => {
        const config = cliConfig(opts);
        if (!existsSync(databaseFile(config))) throw new CliError(`${config.data_dir} holds no installation: run posd init first`);
        const ca = await boxCa(config);
        if (opts.json) return printJson({ file: ca.file, fingerprint: ca.fingerprint });
        if (opts.pem) return void process.stdout.write(ca.pem);
        process.stdout.write(`${caLines(ca).join('\n')}\n`);
      }),
  );
  cmd.addCommand(
    withDataOptions(new Command('issue'))
      .description(
        'issue a server certificate signed by this box CA for other names (HAProxy before a chain, a front, a standby core): ' +
          'certificate, CA and key in one PEM file (mode 0600), as HAProxy crt and tls.cert_file/tls.key_file take it',
      )
      .requiredOption('--name <name...>', 'a DNS name or IP address the certificate covers (repeat or list several)')
      .requiredOption('--out <file>', 'the PEM file written (replaced whole: a reader never sees half of it)')
      .option('--days <n>', 'valid this many days (default tls.cert_validity_days)')
      .option('--json', 'print {file, names, not_after, ca_fingerprint} as JSON')
      .action(async (opts: DataOptions & { name: string[]; out: string; days?: string; json?: boolean }) => {
        const config = cliConfig(opts);
        if (!existsSync(databaseFile(config))) throw new CliError(`${config.data_dir} holds no installation: run posd init first`);
        const names = issuedNames(opts.name);
        const days = opts.days === undefined ? config.tls.cert_validity_days : Number(opts.days);
        if (!Number.isInteger(days) || days < 2 || days > 398) throw new CliError(`--days: a whole number of days from 2 to 398: ${opts.days}`);
        const { BoxPki, writeAtomic } = await import('../system/tls/box-pki.js');
        const pki = new BoxPki(config, SecretBox.fromConfig(config), Date.now);
        const ca = await pki.ensureCa();
        const issued = await pki.issueFor(names, days);
        const file = resolve(opts.out);
        writeAtomic(file, `${issued.chain}${issued.key}`);
        const notAfter = new Date(issued.notAfter).toISOString();
        if (opts.json) return printJson({ file, names, not_after: notAfter, ca_fingerprint: ca.fingerprint });
        const lines = [
          `posd: wrote ${file} (certificate, CA and key; mode 0600)`,
          `  names         ${names.join(', ')}`,
          `  valid until   ${notAfter}`,
          `  signed by     ${ca.file} (SHA-256 ${ca.fingerprint})`,
          '  Issue it again before then and reload what serves it (docs/central.md, "TLS at the load balancer").',
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      }),
  );
  return cmd;
}

const DNS_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** Names as given (`--name a b`, `--name a,b`), each a DNS name or an IP address, once each. */
export function issuedNames(given: string[]): string[] {
  const names = [
    ...new Set(
      given
        .flatMap((n) => n.split(','))
        .map((n) => n.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  if (names.length === 0) throw new CliError('--name: at least one DNS name or IP address');
  for (const n of names) {
    if (isIP(n) === 0 && (n.length > 253 || !n.split('.').every((label) => DNS_LABEL.test(label)))) {
      throw new CliError(`--name: not a DNS name or IP address: ${n}`);
    }
  }
  return names;
}
