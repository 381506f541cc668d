import { statSync, statfsSync } from 'node:fs';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tlsEnabled } from '../../config.js';
import { tlsFiles } from '../../system/tls/files.js';
import { databaseFile } from '../../db/paths.js';
import { schemaVersion } from '../../db/migrate.js';
import {
  statusSources,
  type StoreListing,
  type StoreQuery,
  type CommandInFlight,
  type FailingEndpoint,
  type SalesTotal,
  type SyncState,
  type TerminalStatus,
} from '../../system/status-sources.js';
import { accountsOf } from '../../accounts/service.js';
import { storedNearProblems } from './stored-near.js';
import { age, localText, localizeTimes, zoneName } from './time.js';
import { lastBackupRun, syncOutboxSummary, type BackupRunRow } from './store.js';
import { backupDir } from '../../system/backup.js';
import { dataFolder, recordedChecks } from './doctor.js';
import { diskFullState } from '../../db/disk-full.js';
import { outageNow, type OutageNow } from './outage.js';

/** One thing that needs the manager: what is wrong, and what to do about it. */
export interface Problem {
  problem: string;
  fix: string;
}
import { taxInvoicingState, type TaxInvoicingState } from '../tax-invoices/service.js';

/** A panel either has data, or says why not: its area is not installed, or reading it failed. */
export type Panel<T> = { state: 'ok'; data: T } | { state: 'not_configured' } | { state: 'error'; message: string };

function read<T>(fn: (() => T) | undefined): Panel<T> {
  if (!fn) return { state: 'not_configured' };
  try {
    return { state: 'ok', data: fn() };
  } catch (err) {
    return { state: 'error', message: (err as Error).message };
  }
}

export interface DiskState {
  data_dir: string;
  free_bytes: number;
  total_bytes: number;
  database_bytes: number;
  wal_bytes: number;
  schema_version: number;
  backup_dir: string;
  last_backup: BackupRunRow | null;
  last_failed_backup: BackupRunRow | null;
}

export interface StatusView {
  generated_at: string;
  now_ms: number;
  /** The box's time zone, in which the page shows every time. */
  zone: string;
  /** Empty: all good. Built from doctor's checks (data folder, disk, backups, webhook key, webhooks, sync) and the terminals. */
  verdict: Problem[];
  /** What a link down leaves waiting (null: could not be read). */
  offline: OutageNow | null;
  /** The verdict's level: red (`attention`) when any problem stands, amber (`offline`) while a link is down, else green. */
  level: 'good' | 'offline' | 'attention';
  day: { from: string; until: string };
  terminals: Panel<TerminalStatus[]>;
  commands: Panel<CommandInFlight[]>;
  /** Live sales only: what the store really sold. */
  sales: Panel<SalesTotal[]>;
  /** `?sandbox=1`: sandbox (test) sales, shown apart; null when not asked for. */
  show_sandbox: boolean;
  sandbox_sales: Panel<SalesTotal[]> | null;
  /** Account names by id, so the page names accounts instead of showing their ids. */
  account_names: Record<string, string>;
  /** A central's stores, one page of them with the counts of all (null on a store box). */
  stores: Panel<StoreListing> | null;
  /** A store silent longer than this is red on a central's page and in its verdict (sync.store_silent_ms). */
  store_quiet_ms: number;
  webhooks: Panel<FailingEndpoint[]>;
  can_replay: boolean;
  sync: Panel<SyncState>;
  /** Facts in the local sync outbox: known even when no sync client is configured. */
  sync_recorded: { count: number; oldest: string | null };
  disk: Panel<DiskState>;
  tax_invoicing: Panel<TaxInvoicingState>;
  /** How the box listens (issue 39): plain HTTP off loopback by setting is shown in red. */
  tls: { on: boolean; mode: string; ca_file: string | null; ca_fingerprint: string | null };
}

const size = (file: string) => {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
};

/** Today in the box's local time zone (the store's day), as ISO bounds. */
export function localDay(nowMs: number): { from: string; until: string } {
  const d = new Date(nowMs);
  const from = new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
  const until = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1).getTime();
  return { from: isoTime(from), until: isoTime(until) };
}

export function readDisk(ctx: AppContext): DiskState {
  const fs = statfsSync(ctx.config.data_dir);
  const db = databaseFile(ctx.config);
  const last = lastBackupRun(ctx.db, true) ?? null;
  const latest = lastBackupRun(ctx.db) ?? null;
  return {
    data_dir: ctx.config.data_dir,
    free_bytes: fs.bavail * fs.bsize,
    total_bytes: fs.blocks * fs.bsize,
    database_bytes: size(db),
    wal_bytes: size(`${db}-wal`),
    schema_version: schemaVersion(ctx.db),
    backup_dir: backupDir(ctx.config),
    last_backup: last,
    last_failed_backup: latest && !latest.ok ? latest : null,
  };
}

function accountNames(ctx: AppContext): Record<string, string> {
  const out: Record<string, string> = {};
  try {
    for (const a of accountsOf(ctx).accounts()) out[a.id] = a.name ? (a.live_mode ? a.name : `${a.name} (sandbox)`) : a.id;
  } catch {
    // the ids are shown instead
  }
  return out;
}

function tlsState(ctx: AppContext): StatusView['tls'] {
  const file = tlsFiles(ctx.config).caCert;
  let fingerprint: string | null = null;
  try {
    fingerprint = new X509Certificate(readFileSync(file)).fingerprint256;
  } catch {
    // no box CA yet (made by posd init or the first start with TLS on)
  }
  return { on: tlsEnabled(ctx.config), mode: ctx.config.tls.mode, ca_file: fingerprint ? file : null, ca_fingerprint: fingerprint };
}

/** A stored payment this close to its deadline turns the verdict red (it may yet expire). */
const STORED_DEADLINE_RED_MS = 3_600_000;

/** Red when a stored payment's deadline is under an hour away (or passed): it may yet expire. */
export function storedDeadlineProblem(offline: OutageNow | null, now: number): Problem | null {
  if (offline?.deadline_in_ms == null || offline.deadline_in_ms >= STORED_DEADLINE_RED_MS) return null;
  return {
    problem: `a card payment stored offline ${offline.deadline_in_ms > 0 ? `expires in ${age(offline.deadline_in_ms)}` : 'has passed its deadline'} unless it reaches the processor (${localText(offline.next_deadline!, now)})`,
    fix: 'bring the internet link (or the card processor) back; an expired payment is owed again: collect it from the customer (the outage report lists them)',
  };
}

export function statusView(ctx: AppContext, opts: { sandbox?: boolean; stores?: StoreQuery } = {}): StatusView {
  const src = statusSources(ctx);
  const now = ctx.clock.now();
  const day = localDay(now);
  const sandbox = !!opts.sandbox;
  const verdict = verdictOf(ctx, src, now);
  let offline: OutageNow | null = null;
  try {
    offline = outageNow(ctx);
  } catch {
    // the outage banner shows nothing either; the panels say what they could not read
  }
  const deadline = storedDeadlineProblem(offline, now);
  if (deadline) verdict.push(deadline);
  try {
    for (const { problem, fix } of storedNearProblems(ctx, now)) verdict.push({ problem, fix });
  } catch {
    // no stored payments table readable now: the outage banner says what it could not read
  }
  return {
    generated_at: isoTime(now),
    now_ms: now,
    zone: zoneName(now),
    show_sandbox: sandbox,
    sandbox_sales: sandbox ? read(src.salesBetween && (() => src.salesBetween!(day.from, day.until, false))) : null,
    account_names: accountNames(ctx),
    stores: ctx.config.role === 'central' ? read(src.centralStores && (() => src.centralStores!(opts.stores ?? {}))) : null,
    store_quiet_ms: ctx.config.sync.store_silent_ms,
    verdict,
    offline,
    level: verdict.length > 0 ? 'attention' : offline?.offline ? 'offline' : 'good',
    day,
    terminals: read(src.terminals),
    commands: read(src.commandsInFlight),
    sales: read(src.salesBetween && (() => src.salesBetween!(day.from, day.until, true))),
    webhooks: read(src.failingWebhooks),
    can_replay: !!src.replayFailures,
    sync: read(src.sync),
    sync_recorded: syncOutboxSummary(ctx.db),
    disk: read(() => readDisk(ctx)),
    tax_invoicing: read(() => taxInvoicingState(ctx)),
    tls: tlsState(ctx),
  };
}

/**
 * The page's verdict: doctor's checks that need no network and no full-file scan (so a refresh every
 * 15 s stays cheap), plus the terminals that are not connected. Each problem is one line with what
 * to do; none means "All good".
 */
export function verdictOf(ctx: AppContext, src: ReturnType<typeof statusSources>, nowMs: number): Problem[] {
  const out: Problem[] = [];
  try {
    for (const c of [...dataFolder(ctx.config, diskFullState(ctx.db)), ...recordedChecks(ctx.config, ctx.db, nowMs)]) {
      if (!c.ok) out.push({ problem: localizeTimes(`${c.name}: ${c.detail}`, nowMs), fix: c.fix ?? '' });
    }
  } catch (err) {
    out.push({ problem: `could not run the checks: ${(err as Error).message}`, fix: 'run posd doctor on the box' });
  }
  try {
    // Red on the page is red in the verdict: an endpoint failing now, before doctor's hour-long notice.
    if (!out.some((p) => p.problem.startsWith('webhooks:'))) {
      for (const e of src.failingWebhooks?.() ?? []) {
        const n = e.failed + e.retrying;
        if (e.recovered || (n === 0 && !e.disabled_reason)) continue;
        out.push({
          problem: `webhook endpoint ${e.url}: ${e.disabled_reason ?? `${n} deliver${n === 1 ? 'y' : 'ies'} failed${e.retrying ? ` (${e.retrying} retried by themselves)` : ''}`}`,
          fix: 'check the receiver (the Webhooks panel shows its last answer); resend from the page once it answers',
        });
      }
    }
  } catch {
    // the webhooks panel shows its own read error
  }
  try {
    for (const t of src.terminals?.() ?? []) {
      if (t.available) continue;
      out.push({
        problem: `terminal ${t.name ?? t.id} is not connected${t.last_seen_at ? ` (last seen ${localText(t.last_seen_at, nowMs)})` : ' (never seen)'}`,
        fix: 'check that it is powered on and on the store network (or its cable); it reconnects by itself',
      });
    }
  } catch {
    // the terminals panel shows its own read error
  }
  return out;
}
