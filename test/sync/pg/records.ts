import type { PushBody, PushRecord } from '../../../src/sync/shared/wire.js';

/** A store's records seq from..to (prev_seq chained), cash-sale-like facts with a currency and amount. */
export function records(storeId: string, from: number, to: number, opts: { account?: string; live?: boolean; kind?: string; day?: string } = {}): PushRecord[] {
  const out: PushRecord[] = [];
  for (let seq = from; seq <= to; seq++) {
    out.push({
      seq,
      prev_seq: seq - 1,
      id: `${storeId}_rec_${seq}`,
      kind: opts.kind ?? 'cash_sale',
      account_id: opts.account ?? 'ac_one',
      live_mode: opts.live ?? true,
      payload: { id: `cs_${storeId}_${seq}`, currency: 'eur', amount_in_cents: 100 * seq, note: 'x'.repeat(200) },
      created_at: `${opts.day ?? '2026-11-27'}T10:00:${String(seq % 60).padStart(2, '0')}.000Z`,
    });
  }
  return out;
}

export function push(storeId: string, recs: PushRecord[]): PushBody {
  return { protocol: 1, store_id: storeId, records: recs };
}
