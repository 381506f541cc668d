import Database from 'better-sqlite3';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import type { DiskFullState } from '../../db/disk-full.js';
import { diskSpace } from './disk-check.js';
import { storedPaymentsCheck } from './stored-near.js';
import type { Config } from '../../config.js';
import { databaseFile } from '../../db/paths.js';
import { latestVersion } from '../../db/migrate.js';
import { inspectDatabase } from '../../system/backup.js';
import { readRecoveryPublic } from '../../system/recovery-key.js';
import { runningDaemon } from '../../system/daemon-lock.js';
import { checkSecretsKey } from '../../system/secret-box.js';
import { undici } from '../../system/undici.js';
import { sealedSecretSample, webhookHealth } from '../webhooks/service.js';
import { centralPin, centralTarget, plainLinkError, syncStatus } from '../../sync/status.js';
import { certificateRefusal, isCertificateError, pinnedTls, type CentralPin } from '../../system/tls/central-pin.js';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do about it, when not ok. */
  fix?: string;
}

/** `refused`: the daemon's record of writes refused for space (the page passes it; doctor cannot know it). */
export function dataFolder(config: Config, refused: DiskFullState | null = null): Check[] {
  const dir = config.data_dir;
  if (!existsSync(dir))
    return [
      { name: 'data folder', ok: false, detail: `${dir} does not exist`, fix: `run posd init --data ${dir}, or point --data / POSD_DATA at the right folder` },
    ];
  const st = statSync(dir);
  if (!st.isDirectory()) return [{ name: 'data folder', ok: false, detail: `${dir} is not a folder`, fix: 'point --data at a folder' }];
  const out: Check[] = [];
  try {
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
    out.push({ name: 'data folder', ok: true, detail: `${dir} is readable and writable` });
  } catch {
    out.push({
      name: 'data folder',
      ok: false,
      detail: `${dir} is not writable by uid ${process.getuid?.()}`,
      fix: `chown -R posd:posd ${dir} (run doctor as the posd user: sudo -u posd posd doctor)`,
    });
  }
  if (st.mode & 0o007) {
    out.push({
      name: 'data folder permissions',
      ok: false,
      detail: `${dir} is open to every user (mode ${(st.mode & 0o777).toString(8)})`,
      fix: `chmod 0750 ${dir}`,
    });
  } else {
    out.push({ name: 'data folder permissions', ok: true, detail: `mode ${(st.mode & 0o777).toString(8)}` });
  }
  out.push(diskSpace(config, refused));
  return out;
}

function database(config: Config): Check[] {
  const file = databaseFile(config);
  if (!existsSync(file))
    return [{ name: 'database', ok: false, detail: `${file} does not exist`, fix: 'run posd init (or posd serve once), or posd restore a backup' }];
  const access = databaseAccess(config, file);
  if (!access.ok) return [access];
  const inspection = inspectDatabase(file);
  const version = inspection.schemaVersion;
  const out: Check[] = [access];
  if (!inspection.ok && version === undefined) {
    out.push({ name: 'database integrity', ok: false, detail: inspection.problem ?? 'unreadable', fix: 'stop posd and posd restore the last good backup' });
    return out;
  }
  const newer = version !== undefined && version > latestVersion();
  // Both are whole databases (integrity is checked first) that this posd will not run.
  const whole = inspection.ok || newer || inspection.development === true;
  out.push({
    name: 'database integrity',
    ok: whole,
    detail: whole ? 'integrity_check ok' : inspection.problem!,
    fix: whole ? undefined : 'stop posd and posd restore the last good backup (posd backup files are checked when made)',
  });
  out.push(
    inspection.development
      ? {
          name: 'schema version',
          ok: false,
          detail: `${version}, made by a development build of posd before 0.1`,
          fix: `move ${config.data_dir} away and run posd init`,
        }
      : newer
        ? {
            name: 'schema version',
            ok: false,
            detail: `${version}, newer than this posd (${latestVersion()})`,
            fix: 'run the newer posd that wrote this database, or restore a backup made by this version',
          }
        : {
            name: 'schema version',
            ok: true,
            detail: version === latestVersion() ? `${version} (current)` : `${version}; posd serve will upgrade it to ${latestVersion()}`,
          },
  );
  return out;
}

/**
 * The database file itself: readable and writable by whoever runs this, and owned by the data
 * folder's owner (the service user). A posd.db made by `sudo posd ...` belongs to root, and the
 * service then fails at its first write; doctor says so instead of "unexpected error".
 */
function databaseAccess(config: Config, file: string): Check {
  const st = statSync(file);
  const folderOwner = statSync(config.data_dir).uid;
  const who = `uid ${process.getuid?.()}`;
  try {
    accessSync(file, constants.R_OK | constants.W_OK);
  } catch (err) {
    return {
      name: 'database file',
      ok: false,
      detail: `${file} cannot be ${(err as NodeJS.ErrnoException).code === 'EACCES' ? 'read or written' : 'opened'} by ${who} (owner uid ${st.uid}, mode ${(st.mode & 0o777).toString(8)})`,
      fix: `chown posd:posd ${file}* && chmod 0600 ${file} (and run doctor as the service user: sudo -u posd posd doctor)`,
    };
  }
  if (st.uid !== folderOwner) {
    return {
      name: 'database file',
      ok: false,
      detail: `${file} is owned by uid ${st.uid}${st.uid === 0 ? ' (root)' : ''}, not by the data folder's owner (uid ${folderOwner}): the service cannot write it`,
      fix: `chown ${folderOwner}:${statSync(config.data_dir).gid} ${file}*`,
    };
  }
  return { name: 'database file', ok: true, detail: `readable and writable, owned by uid ${st.uid}` };
}

/** Reads what the database knows about backups and terminals without changing anything. */
function recorded(config: Config, nowMs: number): Check[] {
  const file = databaseFile(config);
  if (!existsSync(file)) return [];
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const stored = storedPaymentsCheck(config, db, nowMs);
    return [...recordedChecks(config, db, nowMs), ...(stored ? [stored] : [])];
  } finally {
    db.close();
  }
}

/**
 * The checks that read the database (backups, the webhook key, webhooks, sync, serial terminals),
 * on any connection: doctor opens the file read-only, the status page's verdict uses the daemon's.
 */
export function recordedChecks(config: Config, db: Database.Database, nowMs: number): Check[] {
  const out: Check[] = [];
  {
    const has = (t: string) => !!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(t);
    if (has('backup_runs') && config.backup.hour >= 0) {
      const last = db.prepare('SELECT finished_at, file, left_out FROM backup_runs WHERE ok = 1 ORDER BY id DESC LIMIT 1').get() as
        | { finished_at: string; file: string; left_out: string | null }
        | undefined;
      const ageH = last ? (nowMs - Date.parse(last.finished_at)) / 3_600_000 : Infinity;
      const leftOut = last?.left_out ? (JSON.parse(last.left_out) as string[]) : [];
      out.push(
        ageH <= 36 && leftOut.length > 0
          ? {
              name: 'last backup',
              ok: false,
              detail: `${last!.finished_at} (${last!.file}) left out ${leftOut.join(', ')}: a box restored from it cannot sign webhooks as before`,
              fix: 'run posd backup now: it seals them to the recovery key (making one, shown once, if the box has none)',
            }
          : ageH <= 36
            ? { name: 'last backup', ok: true, detail: `${last!.finished_at} (${last!.file})` }
            : {
                name: 'last backup',
                ok: false,
                detail: last ? `the last good backup is ${Math.floor(ageH)} hours old (${last.finished_at})` : 'no backup has been taken',
                fix: 'run posd backup now; check the log for "nightly backup failed" and that backup.dir is writable',
              },
      );
    }
    if (has('backup_runs') && config.backup.hour >= 0) out.push(recoveryKeyCheck(config));
    if (has('webhook_endpoints')) {
      out.push({ name: 'webhook signing key', ...checkSecretsKey(config, sealedSecretSample(db)) });
      out.push(webhooks(config, db, nowMs));
    }
    if (has('sync_state')) out.push(...sync(config, db, nowMs));
    if (has('terminals')) out.push(...terminals(db));
    if (has('tax_invoices')) out.push(taxInvoicing(config, db));
  }
  return out;
}

/** Can a backup made now rebuild the box: is there a key its secrets are sealed to? */
function recoveryKeyCheck(config: Config): Check {
  let recovery: ReturnType<typeof readRecoveryPublic>;
  try {
    recovery = readRecoveryPublic(config);
  } catch (err) {
    return { name: 'recovery key', ok: false, detail: (err as Error).message, fix: 'run posd backup recovery-key and write down the key it shows' };
  }
  if (recovery) return { name: 'recovery key', ok: true, detail: `backups are sealed to recovery key ${recovery.id}` };
  if (config.backup.passphrase) return { name: 'recovery key', ok: true, detail: 'no recovery key; backups are sealed under backup.passphrase' };
  return {
    name: 'recovery key',
    ok: false,
    detail: 'no recovery key: backups leave out the webhook signing key and secret settings, and cannot rebuild this box',
    fix: 'run posd backup recovery-key and write down the key it shows (then posd backup)',
  };
}

/** Sync: the same alerts the daemon logs and the page shows (records ageing, link down, records parked). */
function sync(config: Config, db: Database.Database, nowMs: number): Check[] {
  const s = syncStatus(config, db, nowMs);
  if (config.role === 'store' && !s.configured) return [];
  if (s.alerts.length === 0) {
    const detail =
      config.role === 'central'
        ? `no records parked${s.skipped_records ? ` (${s.skipped_records} skipped by an operator: posd sync records --skipped)` : ''}`
        : `${s.records_waiting} record(s) waiting${s.oldest_waiting_at ? ` (oldest ${s.oldest_waiting_at})` : ''}, last success ${s.last_success_at ?? 'never'}`;
    return [{ name: 'sync', ok: true, detail }];
  }
  return s.alerts.map((a) => ({ name: 'sync', ok: false, detail: a.message, fix: a.fix }));
}

/** Webhooks: endpoints failing for longer than webhooks.failing_notice_ms, and deliveries waiting. */
function webhooks(config: Config, db: Database.Database, nowMs: number): Check {
  const h = webhookHealth(db, nowMs - config.webhooks.failing_notice_ms);
  const waiting = `${h.pending} deliver${h.pending === 1 ? 'y' : 'ies'} waiting`;
  if (h.failing.length === 0) return { name: 'webhooks', ok: true, detail: `no endpoint failing; ${waiting}` };
  const first = h.failing[0];
  return {
    name: 'webhooks',
    ok: false,
    detail: `${h.failing.length} endpoint(s) failing, ${first.url} since ${new Date(first.failing_since_ms).toISOString()}; ${waiting}`,
    fix: 'check the receiver (the status page shows the last error per endpoint); resend from the page once it answers, or disable the endpoint',
  };
}

/**
 * A live box without a certifier gives live sales no tax invoice (never a fabricated one): say so,
 * and fail once a live sale is actually waiting for one.
 */
function taxInvoicing(config: Config, db: Database.Database): Check {
  const c = config.money.tax_invoicing;
  if (!c.enabled) return { name: 'tax invoicing', ok: true, detail: 'off (money.tax_invoicing.enabled is false)' };
  if (c.provider === 'http')
    return {
      name: 'tax invoicing',
      ok: true,
      detail: `live invoices certified by ${c.url || '(no url set)'}`,
      ...(c.url ? {} : { ok: false, fix: 'set money.tax_invoicing.url' }),
    };
  const waiting = (db.prepare(`SELECT count(*) AS n FROM tax_invoices WHERE status = 'pending' AND live_mode = 1`).get() as { n: number }).n;
  return {
    name: 'tax invoicing',
    ok: waiting === 0,
    detail: `no tax-invoice certifier is configured for live sales (money.tax_invoicing.provider is sandbox): live sales get no tax_invoice_url${waiting ? `; ${waiting} live invoice(s) waiting` : ''}`,
    fix: waiting ? 'set money.tax_invoicing.provider to http with the certifier url and api_key; waiting invoices are issued by the worker' : undefined,
  };
}

/** Serial terminals name a device; that device must exist and be usable by this user. */
function terminals(db: Database.Database): Check[] {
  // Read defensively by column name: the terminals area owns the table's shape.
  const rows = (db.prepare('SELECT * FROM terminals').all() as Array<Record<string, unknown>>).filter((r) => !r.retired_at);
  const out: Check[] = [];
  for (const row of rows) {
    const id = String(row.id ?? '?');
    const device = ['serial_port', 'serial_path', 'device', 'port', 'path'].map((c) => row[c]).find((v) => typeof v === 'string' && v.startsWith('/'));
    if (typeof device !== 'string') continue;
    try {
      accessSync(device, constants.R_OK | constants.W_OK);
      out.push({ name: `terminal ${id}`, ok: true, detail: `${device} is reachable` });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      out.push({
        name: `terminal ${id}`,
        ok: false,
        detail: `${device}: ${code === 'ENOENT' ? 'no such device' : code}`,
        fix:
          code === 'ENOENT'
            ? 'check the cable and that the terminal is powered; ls /dev/ttyUSB* /dev/ttyACM*'
            : 'add the posd user to the dialout group (the sysusers file does) and restart',
      });
    }
  }
  if (out.length === 0)
    out.push({ name: 'terminals', ok: true, detail: `${rows.length} registered, none on a serial port (WebSocket terminals connect to posd)` });
  return out;
}

/** Compares the box's clock with the central's HTTP Date header (second resolution, so 60 s slack). */
async function clock(url: string, nowMs: () => number, pin: CentralPin | undefined): Promise<Check> {
  const before = nowMs();
  // The link's own trust: the pinned certificate when `posd init` pinned one.
  const agent = new (undici().Agent)({ connect: { timeout: 5000, ...pinnedTls(pin) } });
  try {
    const res = await undici().request(url, { method: 'HEAD', headersTimeout: 5000, bodyTimeout: 5000, dispatcher: agent });
    await res.body.dump();
    const after = nowMs();
    const date = Date.parse(String(res.headers.date ?? ''));
    if (Number.isNaN(date)) return { name: 'clock', ok: false, detail: `${url} sent no Date header`, fix: 'check that this address is a posd central' };
    const skew = (before + after) / 2 - date;
    const ok = Math.abs(skew) <= 60_000;
    return {
      name: 'clock',
      ok,
      detail: `${Math.round(skew / 1000)} s ${skew >= 0 ? 'ahead of' : 'behind'} the central`,
      fix: ok ? undefined : 'turn on time sync: timedatectl set-ntp true (sales and receipts carry this clock)',
    };
  } catch (err) {
    const tls = isCertificateError(err);
    return {
      name: 'clock',
      ok: false,
      detail: `cannot reach the central at ${url} to compare clocks: ${plainLinkError(tls ? certificateRefusal(err, pin) : (err as Error).message)}`,
      fix: tls ? 'compare the pinned fingerprint with posd tls ca at the central' : 'check the network and that the central is up',
    };
  } finally {
    await agent.close();
  }
}

export async function runDoctor(config: Config, nowMs: () => number = Date.now): Promise<Check[]> {
  const checks: Check[] = [...dataFolder(config)];
  let central: { url: string; pin?: CentralPin } | undefined = config.sync.central_url ? { url: config.sync.central_url } : undefined;
  if (checks[0]?.ok) {
    const db = database(config);
    checks.push(...db);
    // Only a file that opened whole is read further (an unreadable one has said why above).
    if (db.every((c) => c.ok || c.name === 'schema version')) {
      checks.push(...recorded(config, nowMs()));
      central = joinedCentral(config) ?? central;
    }
  }
  const pid = runningDaemon(config);
  checks.push({ name: 'daemon', ok: true, detail: pid ? `running (pid ${pid})` : 'not running' });
  if (central) checks.push(await clock(central.url, nowMs, central.pin));
  return checks;
}

/** The central this store pushes to, however it joined: the setting, or `posd init --central-url`. */
function joinedCentral(config: Config): { url: string; pin?: CentralPin } | undefined {
  if (config.role !== 'store') return undefined;
  const db = new Database(databaseFile(config), { readonly: true, fileMustExist: true });
  try {
    const has = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sync_state'").get();
    const url = has ? centralTarget(config, db)?.url : undefined;
    if (!url) return undefined;
    try {
      return { url, pin: centralPin(config, db) };
    } catch {
      return { url }; // an unreadable sync.central_ca_file: the check then says the certificate is not trusted
    }
  } finally {
    db.close();
  }
}
