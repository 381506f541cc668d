import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { nextState } from '../../lifecycle.js';
import { transitionRefusal, ownerRefusal, payloadTimeRefusal, type CheckRefusal, type CheckedRecord } from '../../sync/shared/record-checks.js';
import { contractMachine, type ContractEvent, type ContractStatus } from './machine.js';
import { randomToken } from '../../ids.js';
import type { ContractRecord } from './service.js';
import { ContractsStore } from './store.js';

/** The fields of a `contract` record the central relies on (a record of an older posd lacks `row` and `template`). */
export const ContractPayload = Type.Object({
  row: Type.Object({ id: Type.String(), status: Type.String(), body: Type.String(), updated_at: Type.String() }),
  template: Type.Object({ id: Type.String(), body: Type.String() }),
});

/**
 * A contract sent, signed, declined or expired at a store, applied at the central (sync): its
 * template and the contract written with the store's ids and times when absent (the store owning
 * its reminders and expiry), else the state carried when it is not older than the central's (a
 * later record with an older `updated_at` never overwrites a newer state). The central's copy gets
 * a fresh signing secret nobody holds: the customer signs at the store's link (`signing_url`), never
 * twice. No `contract.send` here: the store's event arrives as an `event` record. Returns a refusal, or null.
 */
export function applyStoreContract(ctx: AppContext, accountId: string, storeId: string | null, record: ContractRecord): string | null {
  const store = new ContractsStore(ctx.db);
  const row = { ...record.row, account_id: accountId };
  const existing = store.get(row.id);
  if (existing && (existing.account_id !== accountId || existing.live_mode !== row.live_mode))
    return `contract ${row.id} belongs to another account at the central`;
  if (existing) {
    if (existing.updated_at > row.updated_at) return null;
    store.save({ ...existing, ...row, template_id: existing.template_id });
    return null;
  }
  const t = store.template(record.template.id);
  if (t && t.account_id !== accountId) return `contract template ${t.id} belongs to another account at the central`;
  if (!t) store.insertTemplate({ ...record.template, account_id: accountId });
  store.insert({ ...row, signing_token: randomToken(32), code_hash: null, code_channel: null, code_expires_at: null, code_attempts: 0, pdf_file: null });
  if (storeId) store.setOrigin(row.id, storeId);
  return null;
}

const CONTRACT_EVENTS: ContractEvent['type'][] = ['VIEW', 'SIGN', 'DECLINE', 'EXPIRE'];

/**
 * What the central's state must allow for a pushed contract (issue 32, at projection): the row is
 * in the record's environment; a contract or template the central holds is the record's account's;
 * a held contract, unless the record is older (the applier skips it), moves to the record's status
 * by its machine (signed, declined and expired are final); the change's time is
 * neither after its record nor before the store.
 */
function checkStoreContract(ctx: AppContext, rec: CheckedRecord & { payload: ContractRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const { row, template } = rec.payload;
  if ((row.live_mode === 1) !== rec.live_mode) {
    return {
      code: 'inconsistent_payload',
      field: 'payload.row.live_mode',
      reason: `a ${rec.live_mode ? 'live' : 'test'} record carries a contract of the other environment`,
    };
  }
  const store = new ContractsStore(ctx.db);
  const existing = store.get(row.id);
  if (existing) {
    const foreign = ownerRefusal(rec, existing, 'payload.row.id', `contract ${row.id}`);
    if (foreign) return foreign;
    if (existing.updated_at > row.updated_at) return null;
    const next = (s: string) => CONTRACT_EVENTS.map((type) => nextState(contractMachine, s as ContractStatus, { type }));
    const refused = transitionRefusal(`contract ${row.id}`, next, existing.status, row.status);
    if (refused) return refused;
  } else {
    const t = store.template(template.id);
    if (t && t.account_id !== rec.account_id) {
      return {
        code: 'foreign_reference',
        field: 'payload.template.id',
        reason: `contract template ${t.id} is not one of account ${rec.account_id} at the central`,
      };
    }
  }
  return payloadTimeRefusal(ctx, rec, origin, 'payload.row.updated_at', row.updated_at);
}

/** Contracts carry their state after the change (`contract`): a newer state is never overwritten by an older record. Counted only. */
export const contractPush: PushKind<ContractRecord> = {
  payload: ContractPayload,
  consistent: (p) => p.template.id === p.row.template_id,
  malformed: 'contract record without row or template (written by an older posd?)',
  check: (ctx, record, origin) => checkStoreContract(ctx, record, origin),
  apply: (ctx, record, origin) => applyStoreContract(ctx, record.account_id, origin.restoring ? null : origin.storeId, record.payload),
  totals: () => null,
};
