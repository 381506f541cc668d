import type pg from 'pg';
import { ApiError, invalid } from '../../errors.js';
import type { SyncRegistry } from '../shared/registry.js';
import { recordHash, type PushBody, type PushRecord, type PushResponse } from '../shared/wire.js';
import { checkAtReceipt, refusalText, type RecordRefusal } from '../central/checks/receipt.js';
import { assertSeqWithin, recordConflict } from '../central/checks/sequence.js';
import { inTransaction } from './pool.js';
import { dateIn, knownZone } from '../shared/summary.js';

/** What a front answers once a push is durably received (the projector applies it later). */
export interface Receipt {
  /** The highest seq of this store now durably received: the box's cursor follows it. */
  received_seq: number;
  /** Records of this push received now. */
  received: number;
  /** Records of this push the central already held, unchanged. */
  duplicates: number;
  /** Records of this push refused by the receipt checks: kept as `rejected`, never applied. */
  rejected: PushResponse['rejected'];
  server_time: string;
}

/** The accounts the pushing key acts for (the scope read model: sync_accounts at the front). */
export interface ReceiptScope {
  /** `created_at`: when the key's account was made (no store of it sold before); absent, not checked. */
  keyAccount: { id: string; live_mode: boolean; created_at?: string };
  /** `currencies`: the account's, as the core published them (absent: the API's charge currencies). */
  accounts: ReadonlyArray<{ id: string; live_mode: boolean; currencies?: readonly string[] }>;
}

/** The receipt checks of issue 32 as a front makes them: the SQLite central's own (`checkAtReceipt`). */
export interface ReceiptChecks {
  registry: Pick<SyncRegistry, 'pushKind'>;
  /** `sync.record_time_skew_ms`. */
  skewMs: number;
}

/** Kinds that are not facts counted per kind in reconciliation (as the SQLite `receivedDay` leaves them out). */
const UNCOUNTED_KINDS = new Set(['event', 'reconciliation_report']);

interface Fresh {
  r: PushRecord;
  payloadJson: string;
  hash: string;
  refusal?: RecordRefusal | null;
}

/**
 * The push receipt transaction of a front (design 4.4), set-based, one transaction per push:
 * 1. `INSERT sync_stores ... ON CONFLICT DO NOTHING`, then `SELECT ... FOR UPDATE` on the store's
 *    row: a box's retry racing its original on another front waits here, and then sees what the
 *    original received, so the `prev_seq` checks stay exact.
 * 2. The hashes of the push's already-received seqs in one `= ANY($1)` read: the same id and hash is
 *    a duplicate, anything else `sync_record_conflict`, as at the SQLite central.
 * 3. One `unnest` insert `ON CONFLICT DO NOTHING RETURNING id` of the new records. A row missing from
 *    the answer is an id another store (or another seq) already holds: the conflict, nothing kept.
 * 4. In that same statement (data-modifying CTEs: one round trip), the `records.<kind>` day totals
 *    of the new records as one `unnest` upsert when `totals` is given (each kind's `SyncTotals` rule
 *    is a pure function of the payload: the registry's `totalsOf`), and `received_seq` advanced.
 * 5. Commit (or roll back on a missing id).
 *
 * The refusals of a push, with the SQLite central's codes and messages: a record naming an account
 * the key does not act for (`sync_account_forbidden`, unless the batch connects a child: the
 * projector decides those, as the SQLite central does at apply time), a store bound to another
 * account (`sync_store_mismatch`), a sequence gap (`sync_sequence_gap`), a seq past the received
 * one + the batch + `SEQ_JUMP` (400 naming the field), a changed record (`sync_record_conflict`).
 * Every refusal keeps nothing of the push.
 *
 * With `checks`, each new record is checked at receipt exactly as the SQLite central checks it (one
 * implementation: src/sync/central/checks/receipt.ts, the push's time being the front's `now`): one
 * that fails is kept as `rejected` with its reason, counted in the store's `rejected_count`, named in
 * the answer, and the core takes that outcome as decided (it never applies it, and tells the box in
 * its feed); the stream goes on past it.
 */
export async function receivePush(
  pool: pg.Pool,
  scope: ReceiptScope,
  body: PushBody,
  opts: { totals?: Pick<SyncRegistry, 'totalsOf'>; now?: () => Date; checks?: ReceiptChecks } = {},
): Promise<Receipt> {
  for (const [i, r] of body.records.entries()) {
    if (i > 0 && r.seq <= body.records[i - 1].seq) throw invalid({ [`records.${i}.seq`]: 'must be greater than the previous record seq' });
    if (r.prev_seq >= r.seq) throw invalid({ [`records.${i}.prev_seq`]: 'must be less than seq' });
  }
  const { keyAccount } = scope;
  const connects = body.records.some((r) => r.kind === 'connected_account');
  if (!connects) {
    const inScope = new Map(scope.accounts.map((a) => [a.id, a.live_mode]));
    for (const r of body.records) {
      if (inScope.get(r.account_id) !== r.live_mode) {
        throw new ApiError('sync_account_forbidden', {
          message: `Record ${r.id} names account ${r.account_id} (${r.live_mode ? 'live' : 'sandbox'}), which this key does not act for; nothing was received.`,
          extra: { record_id: r.id },
        });
      }
    }
  }
  // Hashing is the CPU part: done before the transaction, so the store's row lock is held for SQL only.
  const all: Fresh[] = body.records.map((r) => {
    const payloadJson = JSON.stringify(r.payload);
    return { r, payloadJson, hash: recordHash(r, payloadJson) };
  });
  const now = (opts.now ?? (() => new Date()))();

  return inTransaction(pool, async (c) => {
    await c.query(
      `INSERT INTO sync_stores (store_id, account_id, live_mode, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (store_id) DO NOTHING`,
      [body.store_id, keyAccount.id, keyAccount.live_mode, now],
    );
    const store = (
      await c.query<{ account_id: string; received_seq: number; zone: string | null }>(
        'SELECT account_id, received_seq, zone FROM sync_stores WHERE store_id = $1 FOR UPDATE',
        [body.store_id],
      )
    ).rows[0];
    // The records' days are the box's (its zone, as this push or an earlier one named it; else UTC).
    const zone = body.zone && knownZone(body.zone) ? body.zone : (store.zone ?? 'UTC');
    if (store.account_id !== keyAccount.id) {
      throw new ApiError('sync_store_mismatch', { message: `Store ${body.store_id} pushes for another account; nothing was received.` });
    }
    const before = store.received_seq;

    // Records at or below the received seq must be what the central holds there.
    const old = all.filter((f) => f.r.seq <= before);
    let duplicates = 0;
    if (old.length) {
      const held = await c.query<{ seq: number; id: string; hash: string; kind: string }>(
        "SELECT seq, id, kind, encode(hash, 'hex') AS hash FROM sync_received WHERE store_id = $1 AND seq = ANY($2::bigint[])",
        [body.store_id, old.map((f) => f.r.seq)],
      );
      const bySeq = new Map(held.rows.map((h) => [h.seq, h]));
      for (const { r, hash } of old) {
        const seen = bySeq.get(r.seq);
        if (!seen || seen.id !== r.id || seen.hash !== hash) throw recordConflict(r.id, r.seq, before, seen);
        duplicates++;
      }
    }

    const fresh = all.filter((f) => f.r.seq > before);
    let last = before;
    const ids = new Set<string>();
    // The batch is in seq order, so the new records are its tail: the i-th of them is the record at `offset + i`.
    const offset = all.length - fresh.length;
    for (const [i, { r }] of fresh.entries()) {
      if (r.prev_seq !== last) {
        const expected = last === before ? `the central has received up to seq ${before}` : `the record before it in the batch is seq ${last}`;
        throw new ApiError('sync_sequence_gap', {
          message: `Record ${r.id} (seq ${r.seq}) follows seq ${r.prev_seq}, but ${expected}; nothing was received${last === before ? '' : ` (the central has received up to seq ${before})`}.`,
          extra: { applied_seq: before, record_id: r.id },
        });
      }
      assertSeqWithin(r.seq, offset + i, before, body.records.length);
      if (ids.has(r.id)) throw recordConflict(r.id, r.seq, before);
      ids.add(r.id);
      last = r.seq;
    }
    const rejected: Receipt['rejected'] = [];
    if (opts.checks && fresh.length) {
      const currencies = new Map(scope.accounts.map((a) => [a.id, a.currencies]));
      const joined = keyAccount.created_at === undefined ? Number.NEGATIVE_INFINITY : Date.parse(keyAccount.created_at);
      const bounds = { now: now.getTime(), joinedAt: joined, skewMs: opts.checks.skewMs, currencies: (id: string) => currencies.get(id) };
      for (const f of fresh) {
        f.refusal = checkAtReceipt(opts.checks.registry, f.r, bounds);
        if (f.refusal) rejected.push({ id: f.r.id, reason: f.refusal.reason, code: f.refusal.code, field: f.refusal.field });
      }
    }

    if (fresh.length) {
      // The log insert, the day totals and the store's advance in one statement (one round trip):
      // a refusal after it rolls the whole transaction back, so nothing of a refused push is kept.
      const totals = opts.totals ? dayTotals(fresh, opts.totals, zone) : [];
      const inserted = await c.query<{ id: string }>(
        `WITH ins AS (
           INSERT INTO sync_received (store_id, seq, id, account_id, live_mode, kind, hash, payload, created_at, received_at, outcome, reason, decided_at)
           SELECT $1, t.seq, t.id, t.account_id, t.live_mode, t.kind, decode(t.hash, 'hex'), t.payload, t.created_at, $10,
             CASE WHEN t.reason IS NULL THEN 'received' ELSE 'rejected' END, t.reason, CASE WHEN t.reason IS NULL THEN NULL ELSE $10::timestamptz END
           FROM unnest($2::bigint[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::text[], $21::text[])
             AS t(seq, id, account_id, live_mode, kind, hash, payload, created_at, reason)
           ON CONFLICT DO NOTHING RETURNING id
         ), totals AS (
           INSERT INTO sync_day_totals (store_id, account_id, live_mode, day, currency, measure, count, sum)
           SELECT $1, d.* FROM unnest($11::text[], $12::boolean[], $13::date[], $14::text[], $15::text[], $16::bigint[], $17::bigint[])
             AS d(account_id, live_mode, day, currency, measure, count, sum)
           ON CONFLICT (store_id, account_id, live_mode, day, currency, measure)
           DO UPDATE SET count = sync_day_totals.count + excluded.count, sum = sync_day_totals.sum + excluded.sum
         ), advance AS (
           UPDATE sync_stores SET received_seq = GREATEST(received_seq, $18), last_push_at = $10, box_waiting = $19, box_waiting_since = $20,
             rejected_count = rejected_count + $22, zone = $23 WHERE store_id = $1
         )
         SELECT id FROM ins`,
        [
          body.store_id,
          fresh.map((f) => f.r.seq),
          fresh.map((f) => f.r.id),
          fresh.map((f) => f.r.account_id),
          fresh.map((f) => f.r.live_mode),
          fresh.map((f) => f.r.kind),
          fresh.map((f) => f.hash),
          fresh.map((f) => f.payloadJson),
          fresh.map((f) => f.r.created_at),
          now,
          totals.map((x) => x.account_id),
          totals.map((x) => x.live_mode),
          totals.map((x) => x.day),
          totals.map((x) => x.currency),
          totals.map((x) => x.measure),
          totals.map((x) => x.count),
          totals.map((x) => x.sum),
          last,
          body.waiting ?? null,
          body.waiting === undefined ? null : (body.waiting_since ?? null),
          fresh.map((f) => (f.refusal ? refusalText(f.refusal) : null)),
          rejected.length,
          zone,
        ],
      );
      if (inserted.rows.length !== fresh.length) {
        // An id the central already holds elsewhere (another store's, or this store's at another seq).
        const got = new Set(inserted.rows.map((x) => x.id));
        const taken = fresh.find((f) => !got.has(f.r.id))!;
        const held = await c.query<{ id: string; seq: number; kind: string }>('SELECT id, seq, kind FROM sync_received WHERE id = $1', [taken.r.id]);
        throw recordConflict(taken.r.id, taken.r.seq, before, held.rows[0]);
      }
    } else {
      await c.query('UPDATE sync_stores SET last_push_at = $2, box_waiting = $3, box_waiting_since = $4, zone = $5 WHERE store_id = $1', [
        body.store_id,
        now,
        body.waiting ?? null,
        body.waiting === undefined ? null : (body.waiting_since ?? null),
        zone,
      ]);
    }
    return { received_seq: last, received: fresh.length, duplicates, rejected, server_time: now.toISOString() };
  });
}

/** The day of a record's `created_at` ('YYYY-MM-DD') in the store's zone (UTC unless said), as reconciliation's day spans read it. */
export function dayOf(createdAt: string, zone = 'UTC'): string {
  const t = Date.parse(createdAt);
  if (zone !== 'UTC' && !Number.isNaN(t)) return dateIn(t, zone);
  if (/^\d{4}-\d{2}-\d{2}T[^+]*Z$/.test(createdAt)) return createdAt.slice(0, 10);
  return Number.isNaN(t) ? createdAt.slice(0, 10) : new Date(t).toISOString().slice(0, 10);
}

interface DayTotal {
  account_id: string;
  live_mode: boolean;
  day: string;
  currency: string;
  measure: string;
  count: number;
  sum: number;
}

/**
 * `records.<kind>` count and amount per account, environment, day and currency, as `factTotals`
 * computes them at the SQLite central, for the receipt's upsert into `sync_day_totals`. Added in the
 * receipt transaction, which keeps them only if every record was new: each record counts once.
 */
function dayTotals(fresh: Fresh[], registry: Pick<SyncRegistry, 'totalsOf'>, zone: string): DayTotal[] {
  const out = new Map<string, DayTotal>();
  for (const { r } of fresh) {
    if (UNCOUNTED_KINDS.has(r.kind)) continue;
    const t = registry.totalsOf(r.kind, r.payload);
    const currency = t?.currency ?? '';
    const day = dayOf(r.created_at, zone);
    const key = `${r.account_id}|${r.live_mode}|${day}|${currency}|${r.kind}`;
    let row = out.get(key);
    if (!row) {
      row = { account_id: r.account_id, live_mode: r.live_mode, day, currency, measure: `records.${r.kind}`, count: 0, sum: 0 };
      out.set(key, row);
    }
    row.count++;
    row.sum += t?.amount_in_cents ?? 0;
  }
  return [...out.values()];
}
