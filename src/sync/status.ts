import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { pinOfPem, type CentralPin } from '../system/tls/central-pin.js';
import type { Db } from '../db/database.js';
import { centralSide } from './central/sync-store.js';
import { STATE, syncState } from './shared/state.js';
import { storeSide } from './store/sync-store.js';

/** A sync problem a manager must hear about: one line, and what to do. */
export interface SyncAlert {
  code: 'sync_stalled' | 'sync_link_down' | 'sync_records_parked' | 'sync_store_silent';
  message: string;
  fix: string;
}

export interface SyncStatus {
  role: 'store' | 'central';
  configured: boolean;
  central_url: string | null;
  /** SHA-256 fingerprint of the certificate the link trusts alone (null: none pinned, the system's CAs). */
  central_pinned: string | null;
  store_id: string | null;
  connected: boolean;
  /** Since when the central has not answered (null: it answers, or was never tried). */
  link_down_since: string | null;
  last_success_at: string | null;
  last_pull_at: string | null;
  records_waiting: number;
  oldest_waiting_at: string | null;
  acked_seq: number;
  last_error: string | null;
  last_error_at: string | null;
  central_clock_offset_ms: number | null;
  warnings: string[];
  rejected_records: number;
  /** The central's latest decisions on this box's records, newest first (at most 20). */
  decisions: Array<{ record_id: string; kind: string; reason: string; decided_at: string }>;
  /** Central: records kept without an applier for their kind (applied after an upgrade). */
  held_records: number;
  /** Central: records whose applier failed, waiting for an operator; and those an operator skipped. */
  parked_records: number;
  skipped_records: number;
  /**
   * Central: its side, described (null on a store): how many store boxes it knows, how many are
   * silent past sync.store_silent_ms (the first few named, the longest silent first), and the latest push.
   */
  central: {
    stores: number;
    silent: number;
    silent_stores: Array<{ store_id: string; since: string }>;
    store_silent_ms: number;
    last_push_at: string | null;
  } | null;
  /** What needs a manager now (docs/sync.md, "Sync that raises its hand"). */
  alerts: SyncAlert[];
  reconciliation: {
    state: 'never' | 'equal' | 'different';
    checked_at: string | null;
    differences: Array<{
      account_id: string;
      live_mode: boolean;
      day: string;
      currency: string;
      measure: string;
      store_count: number;
      store_sum: number;
      central_count: number;
      central_sum: number;
    }>;
  };
}

/** Where the store pushes and with which key: config wins, else what `posd init --central-url` stored. */
export function centralTarget(config: Config, db: Db): { url: string; key: string } | null {
  const store = syncState(db);
  const url = config.sync.central_url || store.state(STATE.centralUrl) || '';
  const key = config.sync.central_key || store.state(STATE.centralKey) || '';
  return url && key ? { url: url.replace(/\/$/, ''), key } : null;
}

/**
 * The certificate the store pins for its central: `sync.central_ca_file`, else what `posd init
 * --central-ca/--central-fingerprint` stored; none: the system's CAs. A file that cannot be read
 * throws (the caller says so) rather than falling back to the system's CAs.
 */
export function centralPin(config: Config, db: Db): CentralPin | undefined {
  if (config.sync.central_ca_file) return pinOfPem(readFileSync(config.sync.central_ca_file, 'utf8'));
  const stored = syncState(db).state(STATE.centralCa);
  return stored ? pinOfPem(stored) : undefined;
}

/** The pinned fingerprint for the status; an unreadable `sync.central_ca_file` shows as such. */
function pinnedFingerprint(config: Config, db: Db): string | null {
  if (!config.sync.central_ca_file) return syncState(db).state(STATE.centralFingerprint) ?? null;
  try {
    return centralPin(config, db)?.fingerprint ?? null;
  } catch {
    return `unreadable: ${config.sync.central_ca_file}`;
  }
}

/** Read from the database alone, so `posd sync status` works with the daemon stopped. */
export function syncStatus(config: Config, db: Db, nowMs: number = Date.now()): SyncStatus {
  const store = storeSide(db);
  const central = centralSide(db);
  return db.transaction((): SyncStatus => {
    const target = centralTarget(config, db);
    const acked = Number(store.state(STATE.ackedSeq) ?? 0);
    const waiting = store.waiting(acked);
    const offsetText = store.state(STATE.clockOffset);
    const offset = offsetText === undefined ? null : Number(offsetText);
    const warnings: string[] = [];
    if (offset !== null && Math.abs(offset) > config.sync.clock_warn_ms) {
      warnings.push(`this box's clock differs from the central's by ${Math.round(offset / 1000)} s; fix the time (NTP)`);
    }
    const diffs = store.reconciliationDiffs();
    const checkedAt = store.lastReconciled();
    const counts = config.role === 'central' ? central.outcomeCounts() : { held: central.heldCount(), parked: 0, skipped: 0 };
    const connected = store.state(STATE.lastAttemptOk) === '1';
    const downSince = connected ? null : (store.state(STATE.linkDownSince) ?? null);
    const lastError = store.state(STATE.lastError) ?? null;
    const centralSideNow = config.role === 'central' ? centralView(config, db, nowMs) : null;
    return {
      // A central-front has no SQLite domain and never reads this status (src/front.ts).
      role: config.role === 'central' ? 'central' : 'store',
      configured: target !== null,
      central_url: target?.url ?? null,
      central_pinned: pinnedFingerprint(config, db),
      store_id: store.state(STATE.storeId) ?? null,
      connected,
      link_down_since: downSince,
      last_success_at: store.state(STATE.lastPushOk) ?? null,
      last_pull_at: store.state(STATE.lastPullOk) ?? null,
      records_waiting: waiting.n,
      oldest_waiting_at: waiting.oldest,
      acked_seq: acked,
      last_error: store.state(STATE.lastError) ?? null,
      last_error_at: store.state(STATE.lastErrorAt) ?? null,
      central_clock_offset_ms: offset,
      warnings,
      rejected_records: store.decisionCount(),
      decisions: store.latestDecisions(20),
      central: centralSideNow,
      held_records: counts.held,
      parked_records: counts.parked,
      skipped_records: counts.skipped,
      alerts: syncAlerts(
        config,
        {
          configured: target !== null,
          connected,
          downSince,
          oldest: waiting.oldest,
          waiting: waiting.n,
          lastError,
          parked: counts.parked,
          url: target?.url ?? null,
          central: centralSideNow,
        },
        nowMs,
      ),
      reconciliation: {
        state: checkedAt === null ? 'never' : diffs.length ? 'different' : 'equal',
        checked_at: checkedAt,
        differences: diffs.map((d) => ({
          account_id: d.account_id,
          live_mode: d.live_mode === 1,
          day: d.day,
          currency: d.currency,
          measure: d.measure,
          store_count: d.store_count,
          store_sum: d.store_sum,
          central_count: d.central_count,
          central_sum: d.central_sum,
        })),
      },
    };
  })();
}

/** How many silent stores `sync status`, doctor and the page name (the rest are counted). */
const SILENT_NAMED = 5;

function centralView(config: Config, db: Db, nowMs: number): NonNullable<SyncStatus['central']> {
  const central = centralSide(db);
  const silentMs = config.sync.store_silent_ms;
  const silent = central.silentStores(new Date(nowMs - silentMs).toISOString(), SILENT_NAMED);
  const all = central.storeCount();
  return { stores: all.n, silent: silent.count, silent_stores: silent.first, store_silent_ms: silentMs, last_push_at: all.last };
}

export function ago(ms: number): string {
  const m = Math.round(ms / 60_000);
  return m < 1 ? `${Math.round(ms / 1000)} s` : m < 120 ? `${m} min` : `${Math.round(m / 60)} h`;
}

/** Where this box's central address comes from: the setting, or what `posd init --central-url` stored. */
export function whereCentralIsSet(config: Config): string {
  return config.sync.central_url
    ? 'the address is the setting sync.central_url (POSD_SYNC_CENTRAL_URL)'
    : 'the address is the one this box joined with (posd init --central-url, kept in its database); to point it elsewhere set sync.central_url';
}

/** A link error in plain words, the technical text kept in brackets for whoever looks further. */
export function plainLinkError(error: string): string {
  const words: Array<[RegExp, string]> = [
    [/ECONNREFUSED/, 'the central refused the connection (is it running?)'],
    [/ENOTFOUND|EAI_AGAIN/, "the central's name could not be looked up (internet or DNS down?)"],
    [/ETIMEDOUT|timeout|Timeout/, 'the central did not answer in time'],
    [/ENETUNREACH|EHOSTUNREACH/, 'no route to the central (is the internet link up?)'],
    [/ECONNRESET|socket hang up|other side closed/, 'the connection to the central was cut'],
    [/certificate|CERT_|SSL|TLS/, "the central's certificate was not accepted"],
  ];
  const plain = words.find(([re]) => re.test(error))?.[1];
  return plain ? `${plain} [${error}]` : error;
}

/**
 * The sync problems a manager must hear about. A store: the oldest waiting record older than
 * `sync.alert_waiting_ms` while the central answers (it takes nothing: see the last error), or no
 * contact for longer than `sync.alert_link_down_ms`. A central: records parked for an operator.
 */
export function syncAlerts(
  config: Config,
  s: {
    configured: boolean;
    connected: boolean;
    downSince: string | null;
    oldest: string | null;
    waiting: number;
    lastError: string | null;
    parked: number;
    url?: string | null;
    central?: SyncStatus['central'];
  },
  nowMs: number,
): SyncAlert[] {
  const out: SyncAlert[] = [];
  if (config.role === 'central') {
    const c = s.central;
    if (c && c.silent > 0) {
      const named = c.silent_stores.map((x) => `${x.store_id} (since ${x.since}, ${ago(nowMs - Date.parse(x.since))})`).join(', ');
      out.push({
        code: 'sync_store_silent',
        message: `${c.silent} store(s) have not pushed for more than ${ago(c.store_silent_ms)}: ${named}${c.silent > c.silent_stores.length ? `, and ${c.silent - c.silent_stores.length} more` : ''}`,
        fix: 'check that the store is open and its box is up and online (posd stores show STORE_ID; on the box: posd sync status); a store closed that long is expected: raise sync.store_silent_ms',
      });
    }
    if (s.parked > 0) {
      out.push({
        code: 'sync_records_parked',
        message: `${s.parked} record(s) from stores could not be applied and are parked`,
        fix: 'posd sync records; then posd sync retry RECORD (after the fix) or posd sync skip RECORD --reason TEXT',
      });
    }
    return out;
  }
  if (!s.configured) return out;
  const oldestAge = s.oldest ? nowMs - Date.parse(s.oldest) : 0;
  if (s.connected && oldestAge > config.sync.alert_waiting_ms) {
    out.push({
      code: 'sync_stalled',
      message: `${s.waiting} record(s) waiting for the central, the oldest for ${ago(oldestAge)}, although the central answers${s.lastError ? ` (last error: ${s.lastError})` : ''}`,
      fix: 'posd sync status and the log (sync: ...) say why the central refuses them; posd sync now retries at once',
    });
  }
  const downFor = s.downSince ? nowMs - Date.parse(s.downSince) : 0;
  // A certificate that is not the pinned one is no passing outage (maybe someone else answers for
  // the central): raised at once.
  const certRefused = s.lastError !== null && /: tls: the central's certificate/.test(s.lastError);
  if (!s.connected && (downFor > config.sync.alert_link_down_ms || certRefused)) {
    out.push({
      code: 'sync_link_down',
      message: `no contact with the central for ${ago(downFor)} (since ${s.downSince})${s.waiting ? `; ${s.waiting} record(s) waiting` : ''}${s.lastError ? `: ${plainLinkError(s.lastError)}` : ''}`,
      fix: certRefused
        ? `compare the central's CA fingerprint (posd tls ca at the central) with the one pinned here; a central that really changed its CA is pinned again with sync.central_ca_file. Sales go on and are pushed once it is back`
        : `check this box's internet link and that the central at ${s.url ?? '?'} is up; ${whereCentralIsSet(config)}. Sales go on and are pushed once it is back`,
    });
  }
  return out;
}
