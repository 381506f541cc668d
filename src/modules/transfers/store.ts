import type { Db } from '../../db/database.js';
import { listCount, statementCache } from '../../db/list-counts.js';
import { DEEP, deepPage } from '../../db/deep-pages.js';
import { perDb } from '../../db/per-db.js';

export interface TransferRow {
  id: string;
  account_id: string;
  live_mode: number;
  kind: 'peer' | 'withdrawal';
  status: 'succeeded' | 'in_review' | 'cancelled' | 'pending' | 'in_transit' | 'paid' | 'failed';
  amount_in_cents: number;
  currency: string;
  recipient_account_id: string | null;
  bank_account_id: string | null;
  note: string | null;
  balance_transaction_id: string;
  recipient_balance_transaction_id: string | null;
  return_balance_transaction_id: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
  in_transit_at: string | null;
  paid_at: string | null;
  failed_at: string | null;
}

export interface TransferListFilter {
  accountIds: string[];
  liveMode: boolean;
  kind?: 'peer' | 'withdrawal';
  status?: string;
  /** Peer transfers received count as the reader's too (they moved its balance). */
  includeIncoming: boolean;
}

// A held (in review) or cancelled transfer never reached its recipient: only the sender sees it.
const SCOPE = `live_mode = @live_mode
  AND (account_id IN (SELECT value FROM json_each(@ids))
       OR (@incoming = 1 AND status = 'succeeded' AND recipient_account_id IN (SELECT value FROM json_each(@ids))))
  AND (@kind IS NULL OR kind = @kind)
  AND (@status IS NULL OR status = @status)`;

class TransfersStore {
  private readonly s;

  private readonly cached;

  constructor(private readonly db: Db) {
    this.cached = statementCache(db);
    this.s = {
      insert: db.prepare(
        `INSERT INTO transfers (id, account_id, live_mode, kind, status, amount_in_cents, currency, recipient_account_id,
           bank_account_id, note, balance_transaction_id, recipient_balance_transaction_id, return_balance_transaction_id,
           failure_reason, created_at, updated_at, in_transit_at, paid_at, failed_at)
         VALUES (@id, @account_id, @live_mode, @kind, @status, @amount_in_cents, @currency, @recipient_account_id,
           @bank_account_id, @note, @balance_transaction_id, @recipient_balance_transaction_id, @return_balance_transaction_id,
           @failure_reason, @created_at, @updated_at, @in_transit_at, @paid_at, @failed_at)`,
      ),
      get: db.prepare('SELECT * FROM transfers WHERE id = ? AND live_mode = ?'),
      list: db.prepare(`SELECT * FROM transfers WHERE ${SCOPE} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`),
      count: db.prepare(`SELECT count(*) AS n FROM transfers WHERE ${SCOPE}`),
      // The status guard makes a lost race (two advances at once) change nothing instead of twice.
      setStatus: db.prepare(
        `UPDATE transfers SET status = @status, updated_at = @at,
           in_transit_at = CASE WHEN @status = 'in_transit' THEN @at ELSE in_transit_at END,
           paid_at = CASE WHEN @status = 'paid' THEN @at ELSE paid_at END,
           failed_at = CASE WHEN @status = 'failed' THEN @at ELSE failed_at END,
           failure_reason = COALESCE(@failure_reason, failure_reason),
           return_balance_transaction_id = COALESCE(@return_balance_transaction_id, return_balance_transaction_id),
           recipient_balance_transaction_id = COALESCE(@recipient_balance_transaction_id, recipient_balance_transaction_id)
         WHERE id = @id AND status = @from`,
      ),
    };
  }

  insert(row: TransferRow): void {
    this.s.insert.run(row);
  }
  get(id: string, liveMode: boolean): TransferRow | undefined {
    return this.s.get.get(id, liveMode ? 1 : 0) as TransferRow | undefined;
  }
  list(f: TransferListFilter, limit: number, offset: number): { rows: TransferRow[]; total: number } {
    const params = {
      live_mode: f.liveMode ? 1 : 0,
      ids: JSON.stringify(f.accountIds),
      incoming: f.includeIncoming ? 1 : 0,
      kind: f.kind ?? null,
      status: f.status ?? null,
    };
    // One account (the usual key): each arm reads its own index in order and SQLite merges the two
    // (decision 0270); the counts come from the counters. Several accounts keep the OR and its sort.
    // A status is counted for withdrawals only: any other, like several accounts, takes the general form.
    if (f.accountIds.length !== 1 || (f.status && f.kind !== 'withdrawal')) {
      return { rows: this.s.list.all({ ...params, limit, offset }) as TransferRow[], total: (this.s.count.get(params) as { n: number }).n };
    }
    const incoming = f.includeIncoming && f.kind !== 'withdrawal';
    const out = ['account_id = @id', 'live_mode = @live_mode'];
    if (f.kind) out.push('kind = @kind');
    if (f.status) out.push('status = @status');
    const arm = `SELECT * FROM transfers WHERE ${out.join(' AND ')}`;
    const sql = incoming
      ? `${arm} UNION ALL SELECT * FROM transfers WHERE recipient_account_id = @id AND live_mode = @live_mode AND status = 'succeeded' AND account_id <> @id${f.kind ? ' AND kind = @kind' : ''}`
      : arm;
    const args = { id: f.accountIds[0], live_mode: params.live_mode, kind: params.kind, status: params.status, limit, offset };
    const used = Object.fromEntries(Object.entries(args).filter(([k]) => sql.includes(`@${k}`) || k === 'limit' || k === 'offset'));
    const stmt = this.cached(`${sql} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`);
    const sent = (key: string) => listCount(this.db, 'transfers', f.accountIds, f.liveMode, key);
    const count = () =>
      (f.kind ? sent(f.status ? `${f.kind}/${f.status}` : f.kind) : sent('peer') + sent('withdrawal')) +
      (incoming ? listCount(this.db, 'transfers_in', f.accountIds, f.liveMode) : 0);
    const { limit: _l, offset: _o, ...bound } = used;
    const deep = offset >= DEEP ? deepPage<TransferRow>(this.db, stmt.source, bound, limit, offset, count) : undefined;
    if (deep) return { rows: deep.rows, total: deep.total! };
    return { rows: stmt.all(used) as TransferRow[], total: count() };
  }
  setStatus(input: {
    id: string;
    from: string;
    status: string;
    at: string;
    failure_reason?: string | null;
    return_balance_transaction_id?: string | null;
    recipient_balance_transaction_id?: string | null;
  }): boolean {
    return (
      this.s.setStatus.run({
        failure_reason: null,
        return_balance_transaction_id: null,
        recipient_balance_transaction_id: null,
        ...input,
      }).changes === 1
    );
  }
}

export const transfersStore = perDb((db) => new TransfersStore(db));
