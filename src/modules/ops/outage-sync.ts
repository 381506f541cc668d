import { Type } from '@sinclair/typebox';
import type { Worker } from '../../api/module.js';
import type { AppContext } from '../../context.js';
import type { TimerHandle } from '../../clock.js';
import { isoTime } from '../../clock.js';
import { groupCommit } from '../../db/group-commit.js';
import { MAX_LINE_CENTS } from '../../money.js';
import { appendSyncRecord } from '../../outbox/sync-records.js';
import { accountsOf } from '../../accounts/service.js';
import type { PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { inKeyScope, payloadTimeRefusal, type CheckRefusal } from '../../sync/shared/record-checks.js';
import { storeSide, type OutageWindowRow } from '../../sync/store/sync-store.js';
import { centralStoredStore, storedPaymentsBetween } from '../terminals/stored/service.js';
import { centralOutageStore } from './outage-store.js';
import { MIN_OUTAGE_MS, takenOfflineOf, type TakenOfflineRow } from './outage.js';

/**
 * A store's outage windows at its central (docs/stored-payments.md, "At the central"): each window
 * of the box's link to the central or to the card processor, once it has ended, as an
 * `outage_window` record carrying its link, start and end and, for a processor window, what the
 * box took offline during it (the cards its terminals stored, per terminal and currency). The
 * central keeps them (`central_outage_windows`) and builds `/api/outage_reports` across its
 * stores from them and from what the stores' other records brought.
 */

// Value.Check knows no `format` here (no format registry): the shape of posd's own times instead.
const ISO_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$';
/** More cards than any terminal stores in one outage: a count past it is no honest box's. */
export const MAX_TAKEN_OFFLINE = 100_000;

const TakenOffline = Type.Object(
  {
    terminal_id: Type.String({ minLength: 1, maxLength: 64 }),
    account_id: Type.String({ minLength: 1, maxLength: 64 }),
    live_mode: Type.Boolean(),
    currency: Type.String({ pattern: '^[A-Z]{3}$' }),
    count: Type.Integer({ minimum: 1, maximum: MAX_TAKEN_OFFLINE }),
    amount_in_cents: Type.Integer({ minimum: 1 }),
  },
  { additionalProperties: false },
);

export const OutageWindowPayload = Type.Object({
  link: Type.Union([Type.Literal('central'), Type.Literal('processor')]),
  started_at: Type.String({ pattern: ISO_TIME }),
  ended_at: Type.String({ pattern: ISO_TIME }),
  taken_offline: Type.Array(TakenOffline, { maxItems: 1000 }),
});

export type OutageWindowFacts = (typeof OutageWindowPayload)['static'];
type Rec = { account_id: string; live_mode: boolean; created_at: string; payload: OutageWindowFacts };

/** What the box stored offline in [from, until), per terminal, account and currency (a processor window's `taken_offline`). */
export function takenOfflineBetween(ctx: AppContext, fromIso: string, untilIso: string): TakenOfflineRow[] {
  return takenOfflineOf(storedPaymentsBetween(ctx, fromIso, untilIso));
}

/**
 * The account a box's own records go under: its oldest live account that is no sandbox, one with no
 * parent first (the store key's; a box whose key is a connected account's holds only that one).
 */
function boxAccount(ctx: AppContext): string | undefined {
  return accountsOf(ctx)
    .accounts()
    .filter((a) => a.live_mode && !a.sandbox_of)
    .sort((a, b) => Number(!!a.parent_account_id) - Number(!!b.parent_account_id) || a.created_at.localeCompare(b.created_at))[0]?.id;
}

/**
 * Writes an `outage_window` record for each window that has ended and has none yet, marking it in
 * the same transaction. A blip of the central link shorter than a minute that no processor window
 * overlaps (no outage worth a report at the box either, `MIN_OUTAGE_MS`) is marked without a
 * record: a flapping link sends nothing. Returns how many records were written.
 */
export function reportOutageWindows(ctx: AppContext, limit = 50): number {
  const store = storeSide(ctx.db);
  const accountId = boxAccount(ctx);
  if (!accountId) return 0;
  let n = 0;
  for (const w of store.unreportedOutages(limit) as Array<OutageWindowRow & { ended_at: string }>) {
    if (!store.markOutageReported(w.seq)) continue;
    const blip = w.link === 'central' && Date.parse(w.ended_at) - Date.parse(w.started_at) < MIN_OUTAGE_MS;
    if (blip && !store.outagesBetween(w.started_at, w.ended_at).some((o) => o.link === 'processor')) continue;
    const payload: OutageWindowFacts = {
      link: w.link,
      started_at: w.started_at,
      ended_at: w.ended_at,
      // A card is stored only while its terminal cannot reach the processor: the processor's window holds them all.
      taken_offline: w.link === 'processor' ? takenOfflineBetween(ctx, w.started_at, w.ended_at) : [],
    };
    appendSyncRecord(ctx.db, { kind: 'outage_window', accountId, liveMode: true, payload, createdAt: isoTime(ctx.clock.now()) });
    n++;
  }
  return n;
}

/** How often a store looks for ended windows to report: the central hears of one within this much after it ends. */
export const REPORT_EVERY_MS = 2000;

/** The store's worker that writes the records of ended outage windows (one indexed read every two seconds). */
export class OutageReporter implements Worker {
  readonly name = 'outage-reporter';
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly ctx: AppContext) {}

  start(): void {
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.ctx.shutdown.aborted) return;
    this.timer = this.ctx.clock.setTimeout(() => {
      this.running = this.runNow()
        .catch((err) => this.ctx.log.error({ err: (err as Error).message }, 'could not write the records of ended outage windows; trying again'))
        .finally(() => this.schedule(REPORT_EVERY_MS));
    }, ms);
  }

  async runNow(): Promise<void> {
    // Read first: most passes find nothing, and take no write transaction for it.
    if (storeSide(this.ctx.db).unreportedOutages(1).length === 0) return;
    await groupCommit(this.ctx.db, () => reportOutageWindows(this.ctx));
  }

  async stop(): Promise<void> {
    if (this.timer) this.ctx.clock.clearTimeout(this.timer);
    await this.running;
  }
}

const HOUR_MS = 3_600_000;

/**
 * What the central checks of a reported window at projection, from its own state alone: its times
 * (ended after it started, neither after its record nor before the store's account), no overlap
 * with another window of the same store and link (the box keeps at most one open per link), and
 * what was taken offline: only in a processor window, once per terminal and currency, under
 * accounts the store's key acts for, on terminals no other store reported, amounts a count of API
 * payments can make, and no fewer cards than the central already holds of that terminal stored
 * during the window.
 */
export function checkOutageWindow(ctx: AppContext, rec: Rec, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const p = rec.payload;
  for (const field of ['started_at', 'ended_at'] as const) {
    const t = payloadTimeRefusal(ctx, rec, origin, `payload.${field}`, p[field]);
    if (t) return t;
  }
  if (!(Date.parse(p.ended_at) > Date.parse(p.started_at))) {
    return { code: 'inconsistent_payload', field: 'payload.ended_at', reason: `the window ends (${p.ended_at}) before it starts (${p.started_at})` };
  }
  const overlap = centralOutageStore(ctx.db).overlapping(origin.storeId, p.link, p.started_at, p.ended_at);
  if (overlap && !(overlap.started_at === p.started_at && overlap.ended_at === p.ended_at)) {
    return {
      code: 'inconsistent_payload',
      field: 'payload.started_at',
      reason: `this store reported a ${p.link} window from ${overlap.started_at} to ${overlap.ended_at}; a box keeps one window per link at a time, and ${p.started_at} to ${p.ended_at} overlaps it`,
    };
  }
  if (p.link === 'central' && p.taken_offline.length > 0) {
    return {
      code: 'inconsistent_payload',
      field: 'payload.taken_offline',
      reason: "a card is stored only while its processor is unreachable: the central link's window takes nothing offline",
    };
  }
  const seen = new Set<string>();
  const held = centralStoredStore(ctx.db).storedDuring(origin.storeId, p.started_at, p.ended_at);
  for (const [i, t] of p.taken_offline.entries()) {
    const at = `payload.taken_offline.${i}`;
    const key = `${t.terminal_id}|${t.account_id}|${t.live_mode}|${t.currency}`;
    if (seen.has(key)) return { code: 'inconsistent_payload', field: at, reason: `terminal ${t.terminal_id} in ${t.currency} is listed twice` };
    seen.add(key);
    const account = accountsOf(ctx).account(t.account_id);
    if (!account) return { code: 'unknown_reference', field: `${at}.account_id`, reason: `no account ${t.account_id} at the central` };
    if (!inKeyScope(ctx, origin.keyAccountId, account) || account.live_mode !== t.live_mode) {
      return { code: 'foreign_reference', field: `${at}.account_id`, reason: `account ${t.account_id} is not one this store's key acts for, in that mode` };
    }
    if (!account.currencies.includes(t.currency)) {
      return {
        code: 'invalid_currency',
        field: `${at}.currency`,
        reason: `${t.currency} is not a currency of account ${t.account_id} (${account.currencies.join(', ')})`,
      };
    }
    if (t.amount_in_cents < t.count || t.amount_in_cents > t.count * MAX_LINE_CENTS) {
      return {
        code: 'amount_out_of_range',
        field: `${at}.amount_in_cents`,
        reason: `${t.count} payments make from ${t.count} to ${t.count * MAX_LINE_CENTS} cents, not ${t.amount_in_cents}`,
      };
    }
    const elsewhere = centralStoredStore(ctx.db).terminalElsewhere(t.terminal_id, origin.storeId, t.account_id, t.live_mode);
    if (elsewhere) {
      return {
        code: 'foreign_reference',
        field: `${at}.terminal_id`,
        reason: `terminal ${t.terminal_id} was reported by store ${elsewhere.origin_store_id} under account ${elsewhere.account_id}, not by this store under ${t.account_id}`,
      };
    }
    const known = held.filter((r) => r.terminal_id === t.terminal_id && r.currency === t.currency && r.account_id === t.account_id).length;
    if (t.count < known) {
      return {
        code: 'inconsistent_payload',
        field: `${at}.count`,
        reason: `the central holds ${known} payments terminal ${t.terminal_id} stored in ${t.currency} during this window; the window says ${t.count}`,
      };
    }
  }
  // Stored payments the central holds of this window on a terminal the window leaves out.
  const missing = held.find((r) => !seen.has(`${r.terminal_id}|${r.account_id}|${r.live_mode === 1}|${r.currency}`));
  if (missing && p.link === 'processor') {
    return {
      code: 'inconsistent_payload',
      field: 'payload.taken_offline',
      reason: `the central holds stored payment ${missing.id} of terminal ${missing.terminal_id} stored during this window; the window does not list it`,
    };
  }
  if (Date.parse(p.ended_at) - Date.parse(p.started_at) > 366 * 24 * HOUR_MS) {
    return { code: 'inconsistent_payload', field: 'payload.ended_at', reason: 'a window of more than a year is no outage a box reports' };
  }
  return null;
}

/** The `outage_window` kind (declared by ops/index.ts): checked as above, kept once per store, link and start. Moves no money. */
export const outageWindowPush: PushKind<OutageWindowFacts> = {
  payload: OutageWindowPayload,
  malformed: 'outage_window record without its link, start and end as times, or with what was taken offline malformed',
  totals: () => null,
  check: (ctx, record, origin) => checkOutageWindow(ctx, record, origin),
  apply(ctx, record, origin) {
    // A box taking back its own past after a restore keeps its windows in its own table.
    if (origin.restoring) return;
    const p = record.payload;
    centralOutageStore(ctx.db).insert({
      id: record.id,
      origin_store_id: origin.storeId,
      account_id: record.account_id,
      live_mode: record.live_mode ? 1 : 0,
      link: p.link,
      started_at: p.started_at,
      ended_at: p.ended_at,
      taken_offline: JSON.stringify(p.taken_offline),
    });
  },
};
