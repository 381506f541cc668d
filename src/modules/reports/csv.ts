import type { BalanceTransaction } from '../ledger/service.js';

/**
 * The statement's columns: every field of a ledger row, amounts in cents exactly as the API shows
 * them. `Balance` is `balance_after_in_cents` (spec 2.10: they must match).
 */
export const COLUMNS: ReadonlyArray<[header: string, value: (t: BalanceTransaction) => string | number | null]> = [
  ['Id', (t) => t.id],
  ['Created', (t) => t.created_at],
  ['Type', (t) => t.type],
  ['Description', (t) => t.description],
  ['Currency', (t) => t.currency],
  ['Amount', (t) => t.amount_in_cents],
  ['Fee', (t) => t.fee_in_cents],
  ['Commission', (t) => t.fee_details.commission_in_cents],
  ['VAT withheld', (t) => t.fee_details.vat_withheld_in_cents],
  ['Net', (t) => t.net_amount_in_cents],
  ['Balance', (t) => t.balance_after_in_cents],
  ['Source id', (t) => t.source_id],
  ['Source type', (t) => t.source_type],
  ['Account id', (t) => t.account_id],
];

/**
 * RFC 4180 quoting. Text a spreadsheet would run as a formula (= + - @ at the start) gets a leading
 * apostrophe: a description typed by a buyer must not become a formula on the merchant's computer.
 * Numbers are written as numbers, so negative amounts keep their sign.
 */
function cell(v: string | number | null): string {
  if (v === null) return '';
  if (typeof v === 'number') return String(v);
  let text = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  if (/[",\r\n]/.test(text)) text = `"${text.replace(/"/g, '""')}"`;
  return text;
}

export const HEADER = `${COLUMNS.map(([h]) => h).join(',')}\r\n`;

export function csvLine(t: BalanceTransaction): string {
  return `${COLUMNS.map(([, f]) => cell(f(t))).join(',')}\r\n`;
}
