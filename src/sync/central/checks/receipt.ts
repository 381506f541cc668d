import { Value } from '@sinclair/typebox/value';
import { CHARGE_CURRENCIES, MAX_LINE_CENTS } from '../../../money.js';
import type { MoneyField, SyncRegistry } from '../../shared/registry.js';
import type { PushRecord } from '../../shared/wire.js';

/** Why the central refused one record: a catalogue-like code, the field it concerns, and a sentence. */
export interface RecordRefusal {
  code: string;
  field: string;
  reason: string;
}

/** A refusal as one line of text, kept as the record's `reason` (code and field first, for `posd sync records`). */
export function refusalText(r: RecordRefusal): string {
  return `${r.code} (${r.field}): ${r.reason}`.slice(0, 500);
}

/** The highest seq a record may carry: every integer up to it is exact in JSON and in JavaScript. */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER;

/** What a receipt check knows besides the record: no state but the pushing store's bounds. */
export interface ReceiptBounds {
  /** The push's time at the central (ms). */
  now: number;
  /** When the pushing key's account was made at the central (ms): no store of it sold before. */
  joinedAt: number;
  /** How far a box's clock may run from the central's (`sync.record_time_skew_ms`). */
  skewMs: number;
  /** The currencies of an account the key acts for; undefined for one the central does not know yet. */
  currencies(accountId: string): readonly string[] | undefined;
}

/**
 * The checks of one pushed record that need no state (issue 32), made when the push is received,
 * before the record is taken: its time, its kind's schema and rules, and its amounts as the API
 * checks them. A record failing one is kept as `rejected` (never applied) and the store's stream
 * goes on past it. A kind the central has no declaration for passes (the projector holds it).
 */
export function checkAtReceipt(registry: Pick<SyncRegistry, 'pushKind'>, r: PushRecord, b: ReceiptBounds): RecordRefusal | null {
  const at = Date.parse(r.created_at);
  if (!Number.isFinite(at)) return { code: 'invalid_record_time', field: 'created_at', reason: `created_at ${r.created_at} is not a time` };
  if (at > b.now + b.skewMs) {
    return { code: 'record_in_future', field: 'created_at', reason: `created_at ${r.created_at} is after the push (${new Date(b.now).toISOString()})` };
  }
  if (at < b.joinedAt - b.skewMs) {
    return {
      code: 'record_before_join',
      field: 'created_at',
      reason: `created_at ${r.created_at} is before the store's account was made (${new Date(b.joinedAt).toISOString()})`,
    };
  }
  const kind = registry.pushKind(r.kind);
  if (!kind) return null;
  if (kind.payload) {
    const first = Value.Errors(kind.payload, r.payload).First();
    if (first) {
      const field = `payload${first.path.replaceAll('/', '.')}`;
      return { code: 'invalid_payload', field, reason: `${kind.malformed ?? 'malformed record'}: ${field} ${first.message.toLowerCase()}` };
    }
  }
  if (kind.consistent?.(r.payload) === false) return { code: 'inconsistent_payload', field: 'payload', reason: kind.malformed ?? 'malformed record' };
  for (const m of kind.money?.(r.payload) ?? []) {
    const refusal = checkMoney(m, b.currencies(r.account_id));
    if (refusal) return refusal;
  }
  return null;
}

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/** One amount as the API checks it (`AmountSchema`, `assertAccountCurrency`), and its net = amount + fee (signed). */
function checkMoney(m: MoneyField, currencies: readonly string[] | undefined): RecordRefusal | null {
  const field = `payload.${m.field}`;
  const a = m.amount;
  const range = m.signed ? `from -${MAX_LINE_CENTS} to ${MAX_LINE_CENTS}` : `from ${m.zero ? 0 : 1} to ${MAX_LINE_CENTS}`;
  const within = isInt(a) && (m.signed ? Math.abs(a) <= MAX_LINE_CENTS : a >= (m.zero ? 0 : 1) && a <= MAX_LINE_CENTS);
  if (!within) return { code: 'amount_out_of_range', field, reason: `${field} is ${JSON.stringify(a)}; the API accepts an integer ${range} cents` };
  if (m.currency !== undefined) {
    const currencyField = field.replace(/[^.]+$/, 'currency');
    const allowed = currencies ?? CHARGE_CURRENCIES;
    if (typeof m.currency !== 'string' || !allowed.includes(m.currency)) {
      return {
        code: 'invalid_currency',
        field: currencyField,
        reason: `${currencyField} ${JSON.stringify(m.currency)} is not a currency of the account (${allowed.join(', ')})`,
      };
    }
  }
  if (m.fee !== undefined && m.fee !== null) {
    const feeField = field.replace(/[^.]+$/, 'fee_in_cents');
    if (!isInt(m.fee) || Math.abs(m.fee) > Math.abs(a))
      return { code: 'amount_out_of_range', field: feeField, reason: `${feeField} is ${JSON.stringify(m.fee)}; a fee is an integer no larger than its amount` };
    if (m.net !== undefined && m.net !== null && m.net !== a + m.fee) {
      const netField = field.replace(/[^.]+$/, 'net_amount_in_cents');
      return {
        code: 'inconsistent_amounts',
        field: netField,
        reason: `${netField} is ${JSON.stringify(m.net)}, but amount ${a} and fee ${m.fee} (signed, as the ledger keeps it) make ${a + m.fee}`,
      };
    }
  }
  return null;
}
