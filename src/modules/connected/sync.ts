import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import type { PushKind, SyncOrigin } from '../../sync/shared/registry.js';
import { CHARGE_CURRENCIES } from '../../money.js';
import { nextState } from '../../lifecycle.js';
import { transitionRefusal, payloadTimeRefusal, type CheckRefusal, type CheckedRecord } from '../../sync/shared/record-checks.js';
import { verificationMachine, type VerificationEvent, type VerificationStatus } from './machine.js';
import { ConnectedService } from './service.js';
import type { ProfileRow } from './store.js';

/** The `connected_account` record: a child connected at the store, with both environments' ids. */
export interface ConnectedAccountRecord {
  live_account_id: string;
  sandbox_id: string;
  parent_account_id: string;
  email: string;
  name?: string;
  country?: string;
  default_currency?: string;
  event_format?: 'unified' | 'both';
  created_at?: string;
}

/** The fields of a `connected_account` record the central relies on. */
export const ConnectedAccountPayload = Type.Object({
  live_account_id: Type.String(),
  sandbox_id: Type.String(),
  parent_account_id: Type.String(),
  email: Type.String(),
});

/**
 * A child connected at a store, applied at the central (sync): the live child and its sandbox with
 * the store's ids, under the platform (and the platform's sandbox), each with its connected profile
 * and e-mail, when absent. Records of an older posd without name, country or currency get the
 * store's defaults (the e-mail's local part, GT, GTQ). No `account_connection.create`: the store's
 * event arrives as an `event` record. Returns a refusal, or null.
 */
export function applyStoreConnectedAccount(ctx: AppContext, platformId: string, recordAt: string, r: ConnectedAccountRecord): string | null {
  const svc = new ConnectedService(ctx);
  // A store connects children only under the platform the record names (an account of its key's scope).
  const platform = svc.accounts.account(platformId);
  const liveParent = platform?.live_mode ? platform.id : platform?.sandbox_of;
  if (r.parent_account_id !== liveParent) return `the connection names platform ${r.parent_account_id}, not the record's account ${platformId}`;
  const live = svc.accounts.account(r.live_account_id);
  if (live && live.parent_account_id !== r.parent_account_id) return `account ${r.live_account_id} exists at the central under another parent`;
  if (!live) {
    const parent = svc.accounts.account(r.parent_account_id);
    if (!parent?.live_mode) return `platform ${r.parent_account_id} is unknown at the central`;
    svc.accounts.createAccount({
      id: r.live_account_id,
      sandboxId: r.sandbox_id,
      parentId: r.parent_account_id,
      name: r.name ?? r.email.split('@')[0],
      country: r.country,
      defaultCurrency: r.default_currency,
      eventFormat: r.event_format,
      createdAt: r.created_at ?? recordAt,
    });
  }
  for (const id of [r.live_account_id, r.sandbox_id]) {
    const child = svc.accounts.account(id);
    if (!child) return `account ${id} of the connection is missing at the central`;
    const p = svc.profile(child);
    if (p.email === null) svc.store.save({ ...p, email: r.email });
  }
  return null;
}

/** The `connected_account_verification` record: a child's verification moved at the store. */
export interface VerificationRecord {
  account_id: string;
  status: ProfileRow['verification_status'];
  document_errors: Record<string, string[]>;
  documents?: Record<string, string>;
  reviewed_at?: string;
  verified_at?: string | null;
  tax_id?: string | null;
  tax_name?: string | null;
}

/** The fields of a `connected_account_verification` record the central relies on. */
export const VerificationPayload = Type.Object({
  account_id: Type.String(),
  status: Type.Union(['unverified', 'incomplete', 'rejected', 'verified'].map((s) => Type.Literal(s))),
  document_errors: Type.Object({}),
});

/**
 * A verification decided at a store, applied at the central (sync): the child's status, its
 * document errors, which documents were sent and when (their contents stay at the store), and, once
 * verified, the tax details the accepted registration gave. A record older than the central's
 * review never overwrites a newer one. No `verification.*` events: the store's arrive as records.
 */
export function applyStoreVerification(ctx: AppContext, accountId: string, recordAt: string, r: VerificationRecord): string | null {
  const svc = new ConnectedService(ctx);
  const child = svc.accounts.account(accountId);
  if (!child || child.id !== r.account_id || !child.parent_account_id) return `connected account ${r.account_id} is unknown at the central`;
  const p = svc.profile(child);
  const at = r.reviewed_at ?? recordAt;
  if (p.reviewed_at !== null && p.reviewed_at > at) return null;
  const documents = Object.fromEntries(Object.entries(r.documents ?? {}).map(([t, submittedAt]) => [t, { data: null, submitted_at: submittedAt }]));
  svc.store.save({
    ...p,
    verification_status: r.status,
    document_errors: JSON.stringify(r.document_errors),
    documents: r.documents ? JSON.stringify(documents) : p.documents,
    submitted_at: at,
    reviewed_at: at,
    verified_at: r.status === 'verified' ? (r.verified_at ?? at) : p.verified_at,
    updated_at: at,
  });
  if (r.status === 'verified' && r.tax_id) svc.accounts.setTaxDetails(child.id, r.tax_id, r.tax_name ?? null);
  return null;
}

/**
 * What the central's state must allow for a pushed connection (issue 32, at projection): the
 * platform it names is the record's account; ids the central holds already are this connection's
 * (the live child under that platform, the sandbox that child's), never another account; its
 * currency is one the API offers; its time is neither after its record nor before the store.
 */
function checkStoreConnectedAccount(ctx: AppContext, rec: CheckedRecord & { payload: ConnectedAccountRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const r = rec.payload;
  const accounts = new ConnectedService(ctx).accounts;
  const platform = accounts.account(rec.account_id);
  const liveParent = platform?.live_mode ? platform.id : platform?.sandbox_of;
  if (r.parent_account_id !== liveParent) {
    return {
      code: 'foreign_reference',
      field: 'payload.parent_account_id',
      reason: `the connection names platform ${r.parent_account_id}, not the record's account ${rec.account_id}`,
    };
  }
  const live = accounts.account(r.live_account_id);
  if (live && (!live.live_mode || live.parent_account_id !== r.parent_account_id)) {
    return {
      code: 'foreign_reference',
      field: 'payload.live_account_id',
      reason: `account ${r.live_account_id} exists at the central, not as a child of ${r.parent_account_id}`,
    };
  }
  const sandbox = accounts.account(r.sandbox_id);
  if (sandbox && sandbox.sandbox_of !== r.live_account_id) {
    return {
      code: 'foreign_reference',
      field: 'payload.sandbox_id',
      reason: `account ${r.sandbox_id} exists at the central, not as the sandbox of ${r.live_account_id}`,
    };
  }
  if (r.default_currency !== undefined && !(CHARGE_CURRENCIES as readonly string[]).includes(r.default_currency)) {
    return {
      code: 'invalid_currency',
      field: 'payload.default_currency',
      reason: `${r.default_currency} is not a currency the API offers (${CHARGE_CURRENCIES.join(', ')})`,
    };
  }
  return payloadTimeRefusal(ctx, rec, origin, 'payload.created_at', r.created_at);
}

const VERIFICATION_EVENTS: VerificationEvent['type'][] = ['DOCUMENTS_MISSING', 'DOCUMENTS_REJECTED', 'DOCUMENTS_ACCEPTED'];

/**
 * What the central's state must allow for a pushed verification: it is of the record's own account,
 * a connected child the central holds; unless older than the central's review (the applier skips
 * it), its status is where the machine takes the child's (a review never returns to `unverified`);
 * its times are neither after its record nor before the store.
 */
function checkStoreVerification(ctx: AppContext, rec: CheckedRecord & { payload: VerificationRecord }, origin: SyncOrigin): CheckRefusal {
  if (origin.restoring) return null;
  const r = rec.payload;
  const svc = new ConnectedService(ctx);
  const child = svc.accounts.account(rec.account_id);
  if (!child || child.id !== r.account_id || !child.parent_account_id) {
    return {
      code: 'unknown_reference',
      field: 'payload.account_id',
      reason: `${r.account_id} is not the record's account ${rec.account_id} as a connected child at the central`,
    };
  }
  for (const f of ['reviewed_at', 'verified_at'] as const) {
    const time = payloadTimeRefusal(ctx, rec, origin, `payload.${f}`, r[f]);
    if (time) return time;
  }
  const p = svc.profile(child);
  if (p.reviewed_at !== null && p.reviewed_at > (r.reviewed_at ?? rec.created_at)) return null;
  const next = (s: string) => VERIFICATION_EVENTS.map((type) => nextState(verificationMachine, s as VerificationStatus, { type }));
  return transitionRefusal(`the verification of ${r.account_id}`, next, p.verification_status, r.status, 'payload.status');
}

/** A child connected at the store (`connected_account`): it exists at the central with the same ids (and enters the store key's scope at once). Counted only. */
export const connectedAccountPush: PushKind<ConnectedAccountRecord> = {
  payload: ConnectedAccountPayload,
  malformed: 'connected_account record without account ids, parent or e-mail',
  check: (ctx, record, origin) => checkStoreConnectedAccount(ctx, record, origin),
  apply: (ctx, record) => applyStoreConnectedAccount(ctx, record.account_id, record.created_at, record.payload),
  totals: () => null,
};

/** A child's verification moved at the store (`connected_account_verification`). Counted only. */
export const verificationPush: PushKind<VerificationRecord> = {
  payload: VerificationPayload,
  malformed: 'connected_account_verification record without account_id or status',
  check: (ctx, record, origin) => checkStoreVerification(ctx, record, origin),
  apply: (ctx, record) => applyStoreVerification(ctx, record.account_id, record.created_at, record.payload),
  totals: () => null,
};
