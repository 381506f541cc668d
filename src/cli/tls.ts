import { existsSync } from 'node:fs';
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
  return cmd;
}
