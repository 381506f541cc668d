import type pg from 'pg';
import { ApiError } from '../../errors.js';
import { KEY_SHAPE, looksMasked } from '../../api/auth.js';
import { hashKey } from '../../accounts/service.js';
import type { KeySnapshot } from '../shared/wire.js';
import type { SyncAccountRow } from './read-models.js';

type Queryable = Pick<pg.Pool, 'query'>;

/** Who calls a central-front: the key (as the core published it) and, for an account key, its account. */
export interface FrontCaller {
  key: KeySnapshot;
  liveMode: boolean;
  /** The account an account key acts for; null for an organization key. */
  keyAccount: SyncAccountRow | null;
}

interface KeyAccountRow {
  id: string;
  prefix: string;
  hash: string;
  kind: 'account' | 'organization';
  environment: 'live' | 'test';
  account_id: string | null;
  organization_id: string;
  live_mode: boolean;
  created_at: string;
  revoked_at: string | null;
  a_id: string | null;
  a_organization_id: string;
  a_live_mode: boolean;
  a_name: string;
  a_sandbox_of: string | null;
  a_parent_account_id: string | null;
  a_tax_id: string | null;
  a_tax_name: string | null;
  a_country: string;
  a_default_currency: string;
  a_event_format: 'unified' | 'both';
  a_created_at: string;
}

/**
 * Authenticates a sync call at a central-front from the published read models (`sync_keys`,
 * `sync_accounts`), with the refusals, codes and order of the core's `Authenticator`
 * (src/api/auth.ts): a missing, masked, malformed, unknown or revoked key, and an account key whose
 * environment is not its account's. The key is hashed as there (`hashKey`); the key and its account
 * are read in one statement, on every call: a revocation the core published stops the very next one.
 */
export async function authenticateFront(db: Queryable, rawKey: string | undefined): Promise<FrontCaller> {
  const key = rawKey?.trim();
  if (!key) throw new ApiError('missing_key');
  if (looksMasked(key)) throw new ApiError('masked_key');
  const isTestKey = key.startsWith('sk_test_') || key.startsWith('sk_org_test_');
  if (!KEY_SHAPE.test(key)) throw new ApiError(isTestKey ? 'test_key_not_found' : 'invalid_key');
  const res = await db.query<KeyAccountRow>(
    `SELECT k.id, k.prefix, k.hash, k.kind, k.environment, k.account_id, k.organization_id, k.live_mode, k.created_at, k.revoked_at,
       a.id AS a_id, a.organization_id AS a_organization_id, a.live_mode AS a_live_mode, a.name AS a_name, a.sandbox_of AS a_sandbox_of,
       a.parent_account_id AS a_parent_account_id, a.tax_id AS a_tax_id, a.tax_name AS a_tax_name, a.country AS a_country,
       a.default_currency AS a_default_currency, a.event_format AS a_event_format, a.created_at AS a_created_at
     FROM sync_keys k LEFT JOIN sync_accounts a ON a.id = k.account_id WHERE k.hash = $1`,
    [hashKey(key)],
  );
  const row = res.rows[0];
  if (!row) throw new ApiError(isTestKey ? 'test_key_not_found' : 'invalid_key');
  if (row.revoked_at) throw new ApiError(row.environment === 'test' ? 'test_key_not_found' : 'revoked_key');
  const liveMode = row.environment === 'live';
  const snapshot: KeySnapshot = {
    id: row.id,
    prefix: row.prefix,
    hash: row.hash,
    kind: row.kind,
    environment: row.environment,
    account_id: row.account_id,
    organization_id: row.organization_id,
    live_mode: row.live_mode ? 1 : 0,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  };
  if (row.kind !== 'account') return { key: snapshot, liveMode, keyAccount: null };
  // A key whose account is not published (yet) is no key here, as at the core.
  if (!row.a_id) throw new ApiError('invalid_key');
  if (row.a_live_mode !== liveMode) throw new ApiError('environment_mismatch');
  return {
    key: snapshot,
    liveMode,
    keyAccount: {
      id: row.a_id,
      organization_id: row.a_organization_id,
      live_mode: row.a_live_mode,
      name: row.a_name,
      sandbox_of: row.a_sandbox_of,
      parent_account_id: row.a_parent_account_id,
      tax_id: row.a_tax_id,
      tax_name: row.a_tax_name,
      country: row.a_country,
      default_currency: row.a_default_currency,
      event_format: row.a_event_format,
      created_at: row.a_created_at,
    },
  };
}

/** The account of a store key (account keys only: a store writes), as `storeKeyAccount` at the core. */
export function storeKeyOf(caller: FrontCaller): SyncAccountRow {
  if (!caller.keyAccount) throw new ApiError('organization_key_unsupported');
  return caller.keyAccount;
}
