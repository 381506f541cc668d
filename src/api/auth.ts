import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { type AccountsService, hashKey, type Account, type Environment, type KeyKind } from '../accounts/service.js';

/** Who is calling and on which accounts they act: set on every `/api` request by `authenticate`. */
export interface AuthContext {
  keyId: string;
  keyPrefix: string;
  kind: KeyKind;
  environment: Environment;
  liveMode: boolean;
  organizationId: string;
  /** The account that owns an account key; null for an organization key. */
  keyAccount: Account | null;
  /** The account the request acts on; null only for an organization key reading without X-ACCOUNT-ID. */
  account: Account | null;
  /** The accounts a read covers: the acting account, or every account of the organization. */
  accountIds: string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext;
  }
}

/** The acting account, or 400 when an organization key reads an endpoint that needs one account. */
export function requireAccount(req: FastifyRequest): Account {
  if (!req.auth.account) throw new ApiError('account_id_required');
  return req.auth.account;
}

/** Scope for list queries: which accounts, which environment. */
export function readScope(req: FastifyRequest): { accountIds: string[]; liveMode: boolean } {
  return { accountIds: req.auth.accountIds, liveMode: req.auth.liveMode };
}

/** A key shown masked (`sk_live_…****`) is a display value, never a credential. */
export function looksMasked(key: string): boolean {
  return /[*•…]|\.\.\./.test(key);
}

/** What a secret key looks like: anything else is refused before any lookup (here and at a central-front). */
export const KEY_SHAPE = /^sk_(org_)?(live|test)_[0-9A-Za-z]{16,64}$/;

/**
 * Resolves the secret key and the account context exactly as spec section 5: account keys act on
 * their account or a direct child named by X-ACCOUNT-ID (or its `account_id` alias); organization
 * keys read across the organization; keys resolve only their own environment.
 */
export class Authenticator {
  /**
   * Resolved contexts by key hash and requested account. Authentication runs on every request, and
   * its two lookups and JSON decoding were a sixth of a simple GET's CPU; the cache is dropped as
   * soon as any account or key may have changed (see AccountsStore.changeVersion), so a revoked key
   * stops at the very next request.
   */
  private readonly cache = new Map<string, AuthContext>();
  private cacheVersion = '';

  constructor(private readonly accounts: AccountsService) {}

  authenticate(rawKey: string | undefined, requestedAccountId: string | undefined): AuthContext {
    const key = rawKey?.trim();
    if (!key || !KEY_SHAPE.test(key)) return this.resolve(rawKey, requestedAccountId);
    const version = this.accounts.changeVersion();
    if (version !== this.cacheVersion) {
      this.cache.clear();
      this.cacheVersion = version;
    }
    // Keyed by the key as sent, not its hash: a SHA-256 per request was a twentieth of a GET's CPU
    // (decision 0271); the header already holds the key in memory for as long as the request lives.
    const cacheKey = `${key}|${requestedAccountId ?? ''}`;
    const hit = this.cache.get(cacheKey);
    if (hit) return hit;
    const resolved = this.resolve(key, requestedAccountId);
    // Only successes are kept (failures throw), and only so many: memory stays bounded.
    if (this.cache.size >= 10_000) this.cache.clear();
    this.cache.set(cacheKey, resolved);
    return resolved;
  }

  private resolve(rawKey: string | undefined, requestedAccountId: string | undefined): AuthContext {
    const key = rawKey?.trim();
    if (!key) throw new ApiError('missing_key');
    if (looksMasked(key)) throw new ApiError('masked_key');
    const isTestKey = key.startsWith('sk_test_') || key.startsWith('sk_org_test_');
    if (!KEY_SHAPE.test(key)) throw new ApiError(isTestKey ? 'test_key_not_found' : 'invalid_key');
    const row = this.accounts.keyByHash(hashKey(key));
    if (!row) throw new ApiError(isTestKey ? 'test_key_not_found' : 'invalid_key');
    if (row.revoked_at) throw new ApiError(row.environment === 'test' ? 'test_key_not_found' : 'revoked_key');

    const liveMode = row.environment === 'live';
    if (row.kind === 'account') {
      const keyAccount = this.accounts.account(row.account_id!);
      if (!keyAccount) throw new ApiError('invalid_key');
      if (keyAccount.live_mode !== liveMode) throw new ApiError('environment_mismatch');
      const account = this.actingAccount(keyAccount, requestedAccountId);
      return {
        keyId: row.id,
        keyPrefix: row.prefix,
        kind: 'account',
        environment: row.environment,
        liveMode,
        organizationId: row.organization_id,
        keyAccount,
        account,
        accountIds: [account.id],
      };
    }

    const members = this.accounts.organizationAccounts(row.organization_id, liveMode);
    let account: Account | null = null;
    if (requestedAccountId) {
      account = members.find((a) => a.id === requestedAccountId) ?? null;
      if (!account) throw unknownAccount(requestedAccountId);
    }
    return {
      keyId: row.id,
      keyPrefix: row.prefix,
      kind: 'organization',
      environment: row.environment,
      liveMode,
      organizationId: row.organization_id,
      keyAccount: null,
      account,
      accountIds: account ? [account.id] : members.map((a) => a.id),
    };
  }

  /** Only the key's own account or a direct child; a grandchild, sibling or unknown id is 404 alike. */
  private actingAccount(keyAccount: Account, requested: string | undefined): Account {
    if (!requested || requested === keyAccount.id) return keyAccount;
    const child = this.accounts.account(requested);
    if (!child || child.parent_account_id !== keyAccount.id || child.live_mode !== keyAccount.live_mode) {
      throw unknownAccount(requested);
    }
    return child;
  }
}

function unknownAccount(id: string): ApiError {
  return new ApiError('not_found', { message: `No connected account with id ${id}.` });
}
