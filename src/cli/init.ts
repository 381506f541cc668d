import { existsSync, readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { databaseFile } from '../db/paths.js';
import { CliError, cliConfig, openCliDatabase, printJson, withDataOptions, type DataOptions } from './common.js';
import { AccountsService, initInstallation } from '../accounts/service.js';
import { systemClock } from '../clock.js';
import { CentralClient, CentralRefusal } from '../sync/store/transport.js';
import { joinCentral } from '../sync/store/join.js';
import { boxCa, caLines } from './tls.js';
import { normaliseFingerprint, pinOfPem, presentedChain, type CentralPin } from '../system/tls/central-pin.js';
import { newRecoveryPair, type RecoveryPair } from '../system/recovery-key.js';

/** The pair's private half in init's words, beside the keys: shown once, never stored. */
function recoveryLines(pair: RecoveryPair): string[] {
  return [
    `  recovery key  ${pair.recoveryKey}`,
    '  Write the recovery key down, away from the box: posd restore asks for it to bring back the webhook',
    '  signing key and the settings from a backup. The box keeps only its public half.',
  ];
}

type InitOptions = DataOptions & {
  role: 'store' | 'central';
  name: string;
  json?: boolean;
  centralUrl?: string;
  centralKey?: string;
  centralCa?: string;
  centralFingerprint?: string;
  eventFormats?: 'unified' | 'both';
};

export function initCommand(): Command {
  return withDataOptions(new Command('init'))
    .description(
      'create the installation: an organization with one live account, its sandbox and their keys; ' +
        'or, with --central-url and --central-key, join a central as one of its stores',
    )
    .addOption(new Option('--role <role>', 'store or central').choices(['store', 'central']).default('store'))
    .option('--name <name>', 'name of the organization and its first account', 'My store')
    .addOption(
      new Option(
        '--event-formats <format>',
        'events of the first account and its sandbox: unified, or both (unified plus legacy payment_intent.*); default as spec 6.3',
      ).choices(['unified', 'both']),
    )
    .option('--central-url <url>', "the central's base URL (a store that syncs)")
    .option('--central-key <key>', "the store account's live key, made at the central (posd keys create there)")
    .option('--central-ca <file>', "an https central's CA certificate (PEM, from posd tls ca --pem there): the only certificate the link trusts")
    .option('--central-fingerprint <sha256>', "the SHA-256 fingerprint of an https central's CA or certificate (posd tls ca there): pinned")
    .option('--json', 'print the ids and keys as one JSON object and nothing else')
    .action(async (opts: InitOptions) => {
      if (opts.centralUrl || opts.centralKey || opts.centralCa || opts.centralFingerprint) {
        // A joining store takes its accounts, event format included, from the central.
        if (opts.eventFormats) throw new CliError('--event-formats is set at the central (posd accounts set there), not when joining it');
        return joinAction(opts);
      }
      const config = cliConfig(opts, { role: opts.role });
      const db = openCliDatabase(config, { create: true });
      try {
        const accounts = new AccountsService(db, systemClock, { unifiedSince: config.events.unified_since });
        if (accounts.isInitialised()) throw new CliError(`${config.data_dir} already holds an installation; nothing was changed`);
        const inst = initInstallation(accounts, {
          name: opts.name,
          role: opts.role,
          country: config.accounts.country,
          defaultCurrency: config.accounts.default_currency,
          eventFormat: opts.eventFormats,
        });
        const live = accounts.account(inst.account_id)!.event_format;
        const sandbox = accounts.account(inst.sandbox_id)!.event_format;
        // The CA is made now so its fingerprint can be handed to the tills before the first serve.
        const ca = await boxCa(config);
        const recovery = newRecoveryPair(config);
        if (opts.json)
          return printJson({
            ...inst,
            event_formats: { [inst.account_id]: live, [inst.sandbox_id]: sandbox },
            tls_ca: { file: ca.file, fingerprint: ca.fingerprint },
            recovery_key: recovery.recoveryKey,
            recovery_key_id: recovery.id,
          });
        process.stdout.write(
          [
            `posd: created a ${opts.role} installation in ${config.data_dir}`,
            `  organization  ${inst.organization_id}`,
            `  account       ${inst.account_id} (live), sandbox ${inst.sandbox_id}`,
            `  events        live ${describeFormat(live)}; sandbox ${describeFormat(sandbox)}`,
            `  live key      ${inst.keys.live}`,
            `  test key      ${inst.keys.test}`,
            '  Keys are shown only now: store them somewhere safe.',
            ...recoveryLines(recovery),
            ...caLines(ca),
            ...(live === 'both'
              ? []
              : [
                  `  Choose both event formats (posd accounts set ${inst.account_id} --event-formats both) when this account`,
                  '  continues an existing hosted account, or a shop plugin marks orders paid on payment_intent.succeeded',
                  '  (docs/compatibility.md, "Guides per client").',
                ]),
            '',
          ].join('\n'),
        );
      } finally {
        db.close();
      }
    });
}

/** A store joins its central: the accounts and key hashes come from the central, with the same ids. */
async function joinAction(opts: InitOptions): Promise<void> {
  if (!opts.centralUrl || !opts.centralKey) throw new CliError('--central-url and --central-key go together');
  if (opts.role !== 'store') throw new CliError('only a store joins a central (--role store)');
  let url: URL;
  try {
    url = new URL(opts.centralUrl);
  } catch {
    throw new CliError(`--central-url: not a URL: ${opts.centralUrl}`);
  }
  const config = cliConfig(opts, { role: 'store' });
  if (existsSync(databaseFile(config))) {
    const existing = openCliDatabase(config);
    try {
      if (new AccountsService(existing, systemClock).isInitialised()) {
        throw new CliError(`${config.data_dir} already holds an installation; nothing was changed`);
      }
    } finally {
      existing.close();
    }
  }
  // The central is asked first, so a refused key, a certificate that is not the pinned one or an
  // unreachable central leaves no data folder behind.
  const pin = await pinForJoin(url, opts, config.sync.request_timeout_ms);
  const client = new CentralClient(url.origin + url.pathname.replace(/\/$/, ''), opts.centralKey, { timeoutMs: config.sync.request_timeout_ms, pin });
  let snap;
  try {
    snap = await client.bootstrap();
  } catch (err) {
    await client.close();
    if (err instanceof CentralRefusal && err.status === 404 && err.body.code === 'route_not_found') {
      // A posd store (or another posd role) answers but has no sync endpoints: the key is not the problem.
      throw new CliError(`that server is not a central: ${url.origin} has no sync endpoints (start it with posd serve --role central, or check --central-url)`);
    }
    if (err instanceof CentralRefusal) throw new CliError(`the central refused the key: ${err.body.message ?? err.status}`);
    throw new CliError(`cannot reach the central at ${url.origin}: ${(err as Error).message}`);
  }
  await client.close();
  const db = openCliDatabase(config, { create: true });
  try {
    const joined = joinCentral(db, systemClock, snap, { url: url.toString(), key: opts.centralKey, pin });
    const recovery = newRecoveryPair(config);
    if (opts.json) return printJson({ ...joined, central_pinned: pin?.fingerprint ?? null, recovery_key: recovery.recoveryKey, recovery_key_id: recovery.id });
    process.stdout.write(
      [
        `posd: this box is now store ${joined.store_id} of ${url.origin}`,
        `  organization  ${joined.organization_id}`,
        ...joined.accounts.map((a) => `  account       ${a.id} (${a.live_mode ? 'live' : 'sandbox'}) ${a.name}`),
        `  ${joined.keys} key hashes learned: the keys made at the central work here too.`,
        pin
          ? `  pinned        SHA-256 ${pin.fingerprint}: the only certificate this box trusts for its central`
          : url.protocol === 'https:'
            ? "  pinned        nothing: the system's CAs vouch for the central (--central-ca or --central-fingerprint pins its own CA)"
            : '  plain HTTP    the link to the central is not encrypted: use https:// and pin its CA off loopback',
        ...recoveryLines(recovery),
        '',
      ].join('\n'),
    );
  } catch (err) {
    if (err instanceof Error && /already holds an installation/.test(err.message))
      throw new CliError(`${config.data_dir} already holds an installation; nothing was changed`);
    throw err;
  } finally {
    db.close();
  }
}

/**
 * What `--central-ca` and `--central-fingerprint` pin. A fingerprint alone: the central's chain is
 * read once without trusting it, and the certificate with that fingerprint (its CA, as `posd tls
 * ca` prints it there, or its server certificate) is kept and is from then on the link's only trust
 * anchor. Both: the file must have that fingerprint.
 */
async function pinForJoin(url: URL, opts: InitOptions, timeoutMs: number): Promise<CentralPin | undefined> {
  if (!opts.centralCa && !opts.centralFingerprint) return undefined;
  if (url.protocol !== 'https:') throw new CliError(`--central-ca and --central-fingerprint pin an https:// central; ${url.origin} is plain HTTP`);
  const wanted = opts.centralFingerprint === undefined ? undefined : normaliseFingerprint(opts.centralFingerprint);
  if (opts.centralFingerprint !== undefined && !wanted) {
    throw new CliError(`--central-fingerprint: not a SHA-256 fingerprint (64 hex digits, as posd tls ca prints it): ${opts.centralFingerprint}`);
  }
  if (opts.centralCa) {
    let pin: CentralPin;
    try {
      pin = pinOfPem(readFileSync(opts.centralCa, 'utf8'));
    } catch (err) {
      throw new CliError(`--central-ca: ${opts.centralCa} is not a readable PEM certificate (${(err as Error).message})`);
    }
    if (wanted && wanted !== pin.fingerprint) throw new CliError(`--central-ca: ${opts.centralCa} has the fingerprint ${pin.fingerprint}, not ${wanted}`);
    return pin;
  }
  let chain;
  try {
    chain = await presentedChain(url, timeoutMs);
  } catch (err) {
    throw new CliError(`cannot reach the central at ${url.origin} over TLS: ${(err as Error).message}`);
  }
  const match = chain.find((c) => c.fingerprint256 === wanted);
  if (!match) {
    throw new CliError(
      `the central at ${url.origin} is not the one pinned: none of its certificates has the fingerprint ${wanted} ` +
        `(it presented ${chain.map((c) => c.fingerprint256).join(', ') || 'none'}); run posd tls ca at the central and compare`,
    );
  }
  return pinOfPem(match.toString());
}

/** An event format in a merchant's words (spec 6.3). */
function describeFormat(format: 'unified' | 'both'): string {
  return format === 'both' ? 'both (intent.* and legacy payment_intent.*)' : 'unified (intent.* only)';
}
