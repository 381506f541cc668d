import type { AppContext } from '../../context.js';
import { randomToken } from '../../ids.js';
import type { Contract } from './schema.js';
import { contractView } from './service.js';
import { ContractsStore, type ContractRow, type TemplateRow } from './store.js';

/** The signing secrets never leave the box that sends the codes. */
type SyncedContractRow = Omit<ContractRow, 'signing_token' | 'code_hash' | 'code_channel' | 'code_expires_at' | 'code_attempts' | 'pdf_file'>;

/**
 * The `contract` record of a creation or a state change: the contract as the API answers it, plus
 * the row (the filled text, its times) and the template it was filled from, which a central that
 * never saw them (made at the store) needs to hold the contract.
 */
export type ContractRecord = Contract & { row: SyncedContractRow; template: TemplateRow };

export function contractRecord(ctx: AppContext, row: ContractRow, template: TemplateRow): ContractRecord {
  const { signing_token: _t, code_hash: _h, code_channel: _c, code_expires_at: _e, code_attempts: _a, pdf_file: _p, ...synced } = row;
  return { ...contractView(ctx, row), row: synced, template };
}

export function isContractRecord(p: Record<string, unknown>): p is Record<string, unknown> & ContractRecord {
  const row = p.row as Partial<ContractRow> | undefined;
  const t = p.template as Partial<TemplateRow> | undefined;
  return (
    typeof row?.id === 'string' &&
    typeof row.status === 'string' &&
    typeof row.body === 'string' &&
    typeof row.updated_at === 'string' &&
    typeof t?.id === 'string' &&
    t.id === row.template_id &&
    typeof t.body === 'string'
  );
}

/**
 * A contract sent, signed, declined or expired at a store, applied at the central (sync): its
 * template and the contract written with the store's ids and times when absent (the store owning
 * its reminders and expiry), else the state carried when it is not older than the central's (a
 * later record with an older `updated_at` never overwrites a newer state). The central's copy gets
 * a fresh signing secret nobody holds: the customer signs at the store's link (`signing_url`), never
 * twice. No `contract.send` here: the store's event arrives as an `event` record. Returns a refusal, or null.
 */
export function applyStoreContract(ctx: AppContext, accountId: string, storeId: string, record: ContractRecord): string | null {
  const store = new ContractsStore(ctx.db);
  const row = { ...record.row, account_id: accountId };
  const existing = store.get(row.id);
  if (existing && (existing.account_id !== accountId || existing.live_mode !== row.live_mode)) return `contract ${row.id} belongs to another account at the central`;
  if (existing) {
    if (existing.updated_at > row.updated_at) return null;
    store.save({ ...existing, ...row, template_id: existing.template_id });
    return null;
  }
  const t = store.template(record.template.id);
  if (t && t.account_id !== accountId) return `contract template ${t.id} belongs to another account at the central`;
  if (!t) store.insertTemplate({ ...record.template, account_id: accountId });
  store.insert({ ...row, signing_token: randomToken(32), code_hash: null, code_channel: null, code_expires_at: null, code_attempts: 0, pdf_file: null });
  store.setOrigin(row.id, storeId);
  return null;
}
