import { EventEmitter } from 'node:events';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { basename, dirname } from 'node:path';
import type { Server as TlsServer } from 'node:tls';
import type { Config } from '../../config.js';
import type { Clock, TimerHandle } from '../../clock.js';
import type { Logger } from '../../logger.js';
import { SecretBox } from '../secret-box.js';
import type { BoxPki, CaInfo } from './box-pki.js';

export interface TlsMaterial {
  cert: string;
  key: string;
}

/** What the status page and `posd tls ca` show about the box's TLS. */
export interface TlsStatus {
  source: 'box-ca' | 'files';
  ca?: { file: string; fingerprint: string };
  not_after: string;
  names: string[];
}

/**
 * The certificate posd listens with, kept current while it runs (issue 39): the box CA's server
 * certificate, renewed before it expires (checked at start and every `tls.check_interval_ms` on the
 * injected clock), or the manager's own files (`tls.cert_file`, `tls.key_file`), reloaded when they
 * change. A new certificate is handed to the listening server with `setSecureContext`, so open
 * connections keep theirs and the next handshake gets the new one: no restart. Emits `reloaded`.
 */
export class ServerTls extends EventEmitter {
  private server: TlsServer | undefined;
  private timer: TimerHandle | undefined;
  private watcher: FSWatcher | undefined;
  private filesDigest = '';
  private stopped = false;
  private checking: Promise<void> | undefined;

  private constructor(
    private readonly config: Config,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly pki: BoxPki | undefined,
    public material: TlsMaterial,
    public status: TlsStatus,
  ) {
    super();
  }

  static async start(config: Config, clock: Clock, log: Logger, box?: SecretBox): Promise<ServerTls> {
    // Own files need no box key: a central-front has no data folder to keep one in.
    if (config.tls.cert_file) {
      const material = readOwnFiles(config);
      const tls = new ServerTls(config, clock, log, undefined, material, ownStatus(material));
      tls.filesDigest = digest(material);
      return tls;
    }
    // Loaded only when TLS is on: the certificate library and its dependencies are ~1 MB of code a
    // loopback box never needs (issue 16's idle memory).
    const { BoxPki } = await import('./box-pki.js');
    const pki = new BoxPki(config, box ?? SecretBox.fromConfig(config), () => clock.now());
    const { material, issued } = await pki.ensureServer();
    const ca = await pki.ensureCa();
    if (issued) log.info({ reason: issued, not_after: new Date(material.notAfter).toISOString() }, 'tls: issued the server certificate');
    return new ServerTls(config, clock, log, pki, material, pkiStatus(ca, material));
  }

  /** The listening server whose context a renewal replaces; starts the checks. */
  attach(server: TlsServer): void {
    this.server = server;
    this.schedule();
    if (this.config.tls.cert_file) {
      // The folders, not the files: a file replaced by a rename (how certbot and editors write) is a new inode.
      const files = new Set([this.config.tls.cert_file, this.config.tls.key_file].map((f) => basename(f)));
      const dirs = new Set([dirname(this.config.tls.cert_file), dirname(this.config.tls.key_file)]);
      for (const dir of dirs) {
        try {
          const w = watch(dir, { persistent: false }, (_event, name) => {
            if (name && files.has(String(name))) void this.check();
          });
          w.on('error', () => {});
          this.watcher = w;
        } catch (err) {
          this.log.warn({ err: (err as Error).message, dir }, 'tls: cannot watch the certificate folder; changes are seen at the periodic check');
        }
      }
    }
  }

  /** Renews or reloads when due; never throws (a failure keeps the certificate in use and is logged). */
  check(): Promise<void> {
    this.checking ??= this.run().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async run(): Promise<void> {
    try {
      if (this.pki) {
        const { material, issued } = await this.pki.ensureServer();
        if (!issued) return;
        this.log.info({ reason: issued, not_after: new Date(material.notAfter).toISOString() }, 'tls: renewed the server certificate');
        this.apply(material, pkiStatus(await this.pki.ensureCa(), material));
        return;
      }
      const material = readOwnFiles(this.config);
      const d = digest(material);
      if (d === this.filesDigest) return;
      const status = ownStatus(material);
      this.filesDigest = d;
      this.log.info({ not_after: status.not_after }, 'tls: reloaded the certificate files');
      this.apply(material, status);
    } catch (err) {
      // A half-written pair (cert renamed, key not yet) fails here and succeeds at the next event.
      this.log.warn({ err: (err as Error).message }, 'tls: the certificate was not changed');
    }
  }

  private apply(material: { cert: string; key: string }, status: TlsStatus): void {
    this.server?.setSecureContext({ cert: material.cert, key: material.key });
    this.material = { cert: material.cert, key: material.key };
    this.status = status;
    this.emit('reloaded', status);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = this.clock.setTimeout(() => {
      void this.check().then(() => this.schedule());
    }, this.config.tls.check_interval_ms);
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
    this.watcher?.close();
  }
}

function readOwnFiles(config: Config): TlsMaterial & { notAfter: number } {
  const cert = readFileSync(config.tls.cert_file, 'utf8');
  const key = readFileSync(config.tls.key_file, 'utf8');
  const parsed = new X509Certificate(cert);
  // A key that is not the certificate's would fail every handshake: refuse it before it is used.
  if (!parsed.checkPrivateKey(createPrivateKey(key))) throw new Error(`${config.tls.key_file} is not the key of ${config.tls.cert_file}`);
  return { cert, key, notAfter: Date.parse(parsed.validTo) };
}

function digest(m: TlsMaterial): string {
  return createHash('sha256').update(m.cert).update('\0').update(m.key).digest('hex');
}

function ownStatus(m: TlsMaterial & { notAfter: number }): TlsStatus {
  const parsed = new X509Certificate(m.cert);
  return { source: 'files', not_after: new Date(m.notAfter).toISOString(), names: (parsed.subjectAltName ?? '').split(', ').filter(Boolean) };
}

function pkiStatus(ca: CaInfo, m: { notAfter: number; names: string[] }): TlsStatus {
  return { source: 'box-ca', ca: { file: ca.file, fingerprint: ca.fingerprint }, not_after: new Date(m.notAfter).toISOString(), names: m.names };
}
