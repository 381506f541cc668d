import type { AppContext } from '../../context.js';
import { groupCommit, afterCommit } from '../../db/group-commit.js';
import { projectorBell } from './projector-bell.js';
import { isoTime } from '../../clock.js';
import { ApiError, invalid } from '../../errors.js';
import { accountsOf, type AccountsService, type Account } from '../../accounts/service.js';
import { centralSide, type FeedRow } from './sync-store.js';
import { factTotals, knownZone, localDayRange, toSummary, type DaySpan } from '../shared/summary.js';
import { originTotals } from '../shared/row-totals.js';
import { checkAtReceipt, refusalText, type ReceiptBounds } from './checks/receipt.js';
import { publishRefusal } from './checks/refusal.js';
import { assertSeqWithin, recordConflict as conflict } from './checks/sequence.js';
import { recordHash, type BootstrapResponse, type FeedChange, type PushBody, type PushRecord, type PushResponse, type SummaryRow } from '../shared/wire.js';

/**
 * The accounts one store key acts for at the central: its own account, that account's sandbox, its
 * connected children and theirs. A record naming any other account is refused.
 */
export function syncScope(accounts: AccountsService, keyAccount: Account): Account[] {
  const out: Account[] = [keyAccount];
  const add = (a: Account | undefined) => {
    if (a && !out.some((x) => x.id === a.id)) out.push(a);
  };
  if (keyAccount.live_mode) add(accounts.sandboxOf(keyAccount.id));
  const children = accounts.children(keyAccount.id, 10_000, 0).rows;
  for (const c of children) {
    add(c);
    if (c.live_mode) add(accounts.sandboxOf(c.id));
  }
  return out;
}

/**
 * Receives one pushed batch: checks it (a record of another account, a sequence gap, a record
 * already received with different content) and appends its new records to `sync_received` as
 * `received`, with the store's `received_seq`, in one transaction of the group commit; answers once
 * that is durable. Nothing is applied here: the projector (sync/central/projector.ts), woken by the commit,
 * applies the records in the store's order in slices. A refusal writes nothing. Pushes of one
 * store cannot interleave: the receipt is one synchronous job of the pipeline.
 *
 * The answer's `applied_seq` is the highest seq durably *received* (the box's cursor); `applied`
 * counts the records new to the central (as before: whatever their outcome turns out to be). The
 * outcomes (rejected, held, parked) are decided by the projector and travel as before: a refusal in
 * the store's feed (`record_rejected`), held and parked in `GET /sync/stores` and `posd sync records`.
 */
export async function applyPush(ctx: AppContext, keyAccount: Account, scope: Account[], body: PushBody): Promise<PushResponse> {
  for (const [i, r] of body.records.entries()) {
    if (i > 0 && r.seq <= body.records[i - 1].seq) throw invalid({ [`records.${i}.seq`]: 'must be greater than the previous record seq' });
    if (r.prev_seq >= r.seq) throw invalid({ [`records.${i}.prev_seq`]: 'must be less than seq' });
  }
  // Hashing and serialising are the push's heaviest pure work: done before its turn in the pipeline.
  const prepared = body.records.map((r) => {
    const payloadJson = JSON.stringify(r.payload);
    return { r, payloadJson, hash: recordHash(r, payloadJson) };
  });
  return groupCommit(ctx.db, () => receive(ctx, keyAccount, scope, body.store_id, prepared, body));
}

function receive(
  ctx: AppContext,
  keyAccount: Account,
  scope: Account[],
  storeId: string,
  records: Array<{ r: PushRecord; payloadJson: string; hash: string }>,
  box: Pick<PushBody, 'waiting' | 'waiting_since'> = {},
): PushResponse {
  const store = centralSide(ctx.db);
  const accounts = accountsOf(ctx);
  const mismatch = () => new ApiError('sync_store_mismatch', { message: `Store ${storeId} pushes for another account; nothing was received.` });
  const known = store.storeRow(storeId);
  if (known && known.account_id !== keyAccount.id) throw mismatch();
  const before = known?.received_seq ?? 0;

  let duplicates = 0;
  let last = before;
  const ids = new Set<string>();
  const fresh: typeof records = [];
  for (const [i, rec] of records.entries()) {
    const { r, hash } = rec;
    if (r.seq <= before) {
      const seen = store.receivedAt(storeId, r.seq);
      if (!seen || seen.id !== r.id || seen.hash !== hash) throw conflict(r.id, r.seq, before, seen);
      duplicates++;
      continue;
    }
    if (r.prev_seq !== last) {
      // `last` is the central's received seq only for the batch's first new record; after that it
      // is a record of this batch, which is not received either, so the message must not say so.
      const expected = last === before ? `the central has received up to seq ${before}` : `the record before it in the batch is seq ${last}`;
      throw new ApiError('sync_sequence_gap', {
        message: `Record ${r.id} (seq ${r.seq}) follows seq ${r.prev_seq}, but ${expected}; nothing was received${last === before ? '' : ` (the central has received up to seq ${before})`}.`,
        extra: { applied_seq: before, record_id: r.id },
      });
    }
    assertSeqWithin(r.seq, i, before, records.length);
    if (ids.has(r.id)) throw conflict(r.id, r.seq, before);
    const taken = store.received(r.id);
    if (taken) throw conflict(r.id, r.seq, before, taken);
    ids.add(r.id);
    fresh.push(rec);
    last = r.seq;
  }

  // A record naming an account this key does not act for is refused whole, before anything is
  // written. An account the central does not know yet may be a child the store connected in this
  // batch, or in one received but not applied yet: it is let through, and the projector parks the
  // record if its account is still out of the key's scope when its turn comes.
  const byId = new Map(scope.map((a) => [a.id, a]));
  let refreshed = false;
  const mayConnect = records.some(({ r }) => r.kind === 'connected_account') || (known !== undefined && known.received_seq > known.applied_seq);
  for (const { r } of fresh) {
    let account = byId.get(r.account_id);
    if (!account && !refreshed) {
      refreshed = true;
      for (const a of syncScope(accounts, keyAccount)) byId.set(a.id, a);
      account = byId.get(r.account_id);
    }
    if (account && account.live_mode === r.live_mode) continue;
    if (!account && mayConnect && !accounts.account(r.account_id)) continue;
    throw new ApiError('sync_account_forbidden', {
      message: `Record ${r.id} names account ${r.account_id} (${r.live_mode ? 'live' : 'sandbox'}), which this key does not act for; nothing was received.`,
      extra: { record_id: r.id },
    });
  }

  const nowMs = ctx.clock.now();
  const now = isoTime(nowMs);
  const row = store.ensureStore(storeId, keyAccount.id, keyAccount.live_mode, now);
  if (row.account_id !== keyAccount.id) throw mismatch();
  const bounds = receiptBounds(ctx, keyAccount, byId, nowMs);
  const rejected: PushResponse['rejected'] = [];
  for (const { r, payloadJson, hash } of fresh) {
    // Checked as the API checks a request (issue 32): a refused record is kept as rejected, never
    // applied, and the stream goes on past it; the box hears it in the answer and in its feed.
    const refusal = checkAtReceipt(ctx.registry.sync, r, bounds);
    if (refusal) {
      rejected.push({ id: r.id, reason: refusal.reason, code: refusal.code, field: refusal.field });
      publishRefusal(ctx, r, { storeId, organizationId: keyAccount.organization_id, now, stage: 'receipt' }, refusal);
    }
    store.insertReceived({
      id: r.id,
      store_id: storeId,
      seq: r.seq,
      account_id: r.account_id,
      live_mode: r.live_mode ? 1 : 0,
      kind: r.kind,
      hash,
      payload: payloadJson,
      created_at: r.created_at,
      received_at: now,
      outcome: refusal ? 'rejected' : 'received',
      reason: refusal ? refusalText(refusal) : null,
      decided_at: refusal ? now : null,
    });
  }
  store.setReceived(storeId, last, now, box);
  if (fresh.length) afterCommit(ctx.db, () => projectorBell(ctx.db).ring());
  return { applied_seq: last, applied: fresh.length, duplicates, held: 0, parked: 0, rejected, server_time: now };
}

export function toFeedChange(row: FeedRow): FeedChange {
  return {
    seq: row.seq,
    kind: row.kind,
    account_id: row.account_id,
    organization_id: row.organization_id,
    live_mode: row.live_mode === 1,
    object_id: row.object_id,
    payload: JSON.parse(row.payload),
    created_at: row.created_at,
  };
}

/**
 * One read of the feed: rows after the cursor, and a cursor that skips other accounts' rows (and
 * the rows `storeId`'s own pushes caused) safely. An empty `storeId` (an older box) gets every row.
 */
export function readFeed(ctx: AppContext, keyAccount: Account, after: number, limit: number, storeId = ''): { changes: FeedChange[]; cursor: number } {
  const store = centralSide(ctx.db);
  const accounts = accountsOf(ctx);
  // One snapshot for the scope and both reads: the max seen is committed, so no row below it can
  // appear later, and an account made meanwhile (a new child) is in the scope its rows are read with.
  return ctx.db.transaction(() => {
    const scope = syncScope(accounts, keyAccount);
    const rows = store.feedAfter(
      after,
      scope.map((a) => a.id),
      keyAccount.organization_id,
      storeId,
      limit,
    );
    const cursor = rows.length === limit ? rows[rows.length - 1].seq : Math.max(after, store.feedMax());
    return { changes: rows.map(toFeedChange), cursor };
  })();
}

/** What a new store box needs to act as the central's accounts: ids, names and key hashes, and where the feed is. */
export function bootstrap(ctx: AppContext, accounts: AccountsService, keyAccount: Account, scope: Account[]): BootstrapResponse {
  return ctx.db.transaction(() => {
    const org = accounts.organization(keyAccount.organization_id)!;
    const ids = new Set(scope.map((a) => a.id));
    const keys = accounts.keyRowsOfOrganization(org.id).filter((k) => k.kind === 'organization' || (k.account_id !== null && ids.has(k.account_id)));
    return {
      protocol: 1 as const,
      organization: { id: org.id, name: org.name, created_at: org.created_at },
      accounts: scope.map((a) => ({
        id: a.id,
        live_mode: a.live_mode,
        name: a.name,
        sandbox_of: a.sandbox_of,
        parent_account_id: a.parent_account_id,
        tax_id: a.tax_id,
        tax_name: a.tax_name,
        country: a.country,
        default_currency: a.default_currency,
        event_format: a.event_format,
        created_at: a.created_at,
      })),
      keys,
      // A new box reads its scope's whole feed: what the central made for its accounts before it
      // joined (catalogue, bookings, ledger rows, accounts, keys) reaches it as a live change would.
      feed_cursor: 0,
      server_time: isoTime(ctx.clock.now()),
    };
  })();
}

/**
 * The central's totals of one store's facts, events, ledger rows and intents for one of the store's
 * days: `day` midnight to midnight in the zone the store named (a zone Intl does not know, or none:
 * the UTC day), and that span, which the store sums too.
 */
export function centralSummary(
  ctx: AppContext,
  storeId: string,
  day: string,
  zone?: string,
): { rows: SummaryRow[]; appliedSeq: number; span: DaySpan; zone: string } {
  const store = centralSide(ctx.db);
  const z = zone && knownZone(zone) ? zone : 'UTC';
  const span = localDayRange(day, z);
  const { from, until } = span;
  return ctx.db.transaction(() => ({
    span,
    zone: z,
    rows: [
      ...factTotals(ctx.registry.sync, store.centralFacts(storeId, from, until)),
      ...store.centralEvents(storeId, from, until).map(toSummary),
      // Only the rows this store's records wrote: the central's own rows never came from the store.
      ...originTotals(ctx.registry.sync, ctx.db, from, until, storeId),
    ],
    appliedSeq: store.storeRow(storeId)?.applied_seq ?? 0,
  }))();
}

/** What receipt checks know of the pushing store: the time, when its key's account was made, its accounts' currencies. */
function receiptBounds(ctx: AppContext, keyAccount: Account, scope: Map<string, Account>, now: number): ReceiptBounds {
  return {
    now,
    joinedAt: Date.parse(keyAccount.created_at),
    skewMs: ctx.config.sync.record_time_skew_ms,
    currencies: (id) => scope.get(id)?.currencies,
  };
}
