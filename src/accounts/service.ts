import { createHash } from 'node:crypto';
import type { Db } from '../db/database.js';
import { tx } from '../db/database.js';
import { newId, randomToken } from '../ids.js';
import { isoTime, type Clock } from '../clock.js';
import type { AppContext } from '../context.js';
import { accountsStore, type AccountRow, type KeyRow } from './store.js';
import { DEFAULT_UNIFIED_SINCE, newAccountEventFormat } from '../events/formats.js';
import { appendFeedChange } from '../outbox/feed-changes.js';

export type Environment = 'live' | 'test';
export type KeyKind = 'account' | 'organization';

export interface Account {
  id: string;
  live_mode: boolean;
  organization_id: string;
  name: string;
  sandbox_of: string | null;
  parent_account_id: string | null;
  tax_id: string | null;
  tax_name: string | null;
  country: string;
  default_currency: string;
  currencies: string[];
  event_format: 'unified' | 'both';
  settings: Record<string, unknown>;
  created_at: string;
}

export function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    live_mode: row.live_mode === 1,
    organization_id: row.organization_id,
    name: row.name,
    sandbox_of: row.sandbox_of,
    parent_account_id: row.parent_account_id,
    tax_id: row.tax_id,
    tax_name: row.tax_name,
    country: row.country,
    default_currency: row.default_currency,
    currencies: JSON.parse(row.currencies),
    event_format: row.event_format,
    settings: JSON.parse(row.settings),
    created_at: row.created_at,
  };
}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

const KEY_PREFIX: Record<KeyKind, Record<Environment, string>> = {
  account: { live: 'sk_live_', test: 'sk_test_' },
  organization: { live: 'sk_org_live_', test: 'sk_org_test_' },
};

/** What identifies a key in lists and in `posd keys revoke`: its kind prefix and 8 characters. */
export function keyDisplayPrefix(key: string): string {
  const kind = /^sk_(org_)?(live|test)_/.exec(key)?.[0] ?? '';
  return key.slice(0, kind.length + 8);
}

export interface CreatedKey {
  key: string;
  prefix: string;
  id: string;
  kind: KeyKind;
  environment: Environment;
  account_id: string | null;
  organization_id: string;
}

export interface CreateAccountInput {
  name: string;
  organizationId?: string;
  parentId?: string;
  country?: string;
  defaultCurrency?: string;
  eventFormat?: 'unified' | 'both';
  taxId?: string | null;
  taxName?: string | null;
  /** A store's accounts exist on the central with the same ids (sync). */
  id?: string;
  /** An account learnt from the central keeps its creation time (and with it its event format). */
  createdAt?: string;
  sandboxId?: string;
}

export interface AccountsOptions {
  /** `events.unified_since`: the spec 6.3 change-over instant (see `newAccountEventFormat`). */
  unifiedSince?: string;
}

export class AccountsService {
  private readonly store;
  private readonly unifiedSince: string;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    opts: AccountsOptions = {},
  ) {
    this.store = accountsStore(db);
    this.unifiedSince = opts.unifiedSince ?? DEFAULT_UNIFIED_SINCE;
  }

  private now(): string {
    return isoTime(this.clock.now());
  }

  isInitialised(): boolean {
    return this.store.organizationCount() > 0;
  }

  meta(key: string): string | undefined {
    return this.store.meta(key);
  }

  setMeta(key: string, value: string): void {
    tx(this.db, () => this.store.setMeta(key, value));
  }

  /** `opts` keeps an id and time made elsewhere (a synced store takes its organization from the central). */
  createOrganization(name: string, opts: { id?: string; createdAt?: string } = {}): { id: string; name: string; created_at: string } {
    const row = { id: opts.id ?? newId('org'), name, created_at: opts.createdAt ?? this.now() };
    tx(this.db, () => this.store.insertOrganization(row));
    return row;
  }

  /**
   * A live account and its sandbox, in one transaction. A connected child's sandbox hangs under the
   * platform's sandbox, so `X-ACCOUNT-ID` works the same way with either environment's key.
   */
  createAccount(input: CreateAccountInput): { account: Account; sandbox: Account } {
    return tx(this.db, () => {
      const parent = input.parentId ? this.store.account(input.parentId) : undefined;
      if (input.parentId && parent?.live_mode !== 1) throw new Error(`no live account ${input.parentId}`);
      const organizationId = parent?.organization_id ?? input.organizationId;
      if (!organizationId || !this.store.organization(organizationId)) throw new Error(`no organization ${organizationId ?? '(none)'}`);
      const createdAt = input.createdAt ?? this.now();
      const currency = input.defaultCurrency ?? 'GTQ';
      const common = {
        organization_id: organizationId,
        name: input.name,
        tax_id: input.taxId ?? null,
        tax_name: input.taxName ?? null,
        country: input.country ?? 'GT',
        default_currency: currency,
        currencies: JSON.stringify(currency === 'USD' ? ['USD', 'GTQ'] : ['GTQ', 'USD']),
        settings: '{}',
        created_at: createdAt,
      };
      const liveId = input.id ?? newId('ac');
      this.store.insertAccount({
        ...common,
        id: liveId,
        live_mode: 1,
        sandbox_of: null,
        parent_account_id: parent?.id ?? null,
        event_format:
          input.eventFormat ??
          newAccountEventFormat({
            createdAt,
            unifiedSince: this.unifiedSince,
            parentFormat: parent?.event_format ?? null,
          }),
      });
      const parentSandbox = parent ? this.store.sandboxOf(parent.id) : undefined;
      const sandboxId = input.sandboxId ?? newId('sbx');
      // Spec 6.3: every new sandbox uses the unified event format.
      this.store.insertAccount({
        ...common,
        id: sandboxId,
        live_mode: 0,
        sandbox_of: liveId,
        parent_account_id: parentSandbox?.id ?? null,
        event_format: 'unified',
      });
      const made = { account: toAccount(this.store.account(liveId)!), sandbox: toAccount(this.store.account(sandboxId)!) };
      this.publish(made.account, made.sandbox);
      return made;
    });
  }

  /**
   * At a central, an account made or changed reaches the boxes whose key covers it (a new connected
   * child, its sandbox, new settings) through the feed, in the transaction of the change. The live
   * account and its sandbox travel together so a box makes both with the central's ids.
   */
  private publish(account: Account, sandbox?: Account): void {
    appendFeedChange(this.db, {
      kind: 'account',
      accountId: account.id,
      liveMode: account.live_mode,
      objectId: account.id,
      payload: sandbox ? { account, sandbox } : { account },
      createdAt: this.now(),
    });
  }

  /**
   * An account learnt from the central's feed: made with the central's ids when this box does not
   * hold it (with its sandbox; a child under its platform when the box holds the platform), then its
   * settings and tax details set to the central's. Returns false when it cannot be made here.
   */
  applyCentralAccount(account: Account, sandbox?: Account): boolean {
    return tx(this.db, () => {
      if (!this.store.account(account.id)) {
        if (!account.live_mode || !sandbox) return false; // a sandbox is made with its live account
        if (!this.store.organization(account.organization_id)) return false;
        const parent = account.parent_account_id && this.store.account(account.parent_account_id) ? account.parent_account_id : undefined;
        this.createAccount({
          id: account.id,
          sandboxId: sandbox.id,
          name: account.name,
          organizationId: account.organization_id,
          parentId: parent,
          country: account.country,
          defaultCurrency: account.default_currency,
          eventFormat: account.event_format,
          taxId: account.tax_id,
          taxName: account.tax_name,
          createdAt: account.created_at,
        });
      }
      for (const a of sandbox ? [account, sandbox] : [account]) {
        if (!this.store.account(a.id)) continue;
        this.store.updateSettings(a.id, a.settings);
        this.store.updateTax(a.id, a.tax_id, a.tax_name);
        if (a.event_format) this.store.updateEventFormat(a.id, a.event_format);
      }
      return true;
    });
  }

  account(id: string): Account | undefined {
    const row = this.store.account(id);
    return row ? toAccount(row) : undefined;
  }

  accounts(): Account[] {
    return this.store.accounts().map(toAccount);
  }

  organizationAccounts(organizationId: string, liveMode: boolean): Account[] {
    return this.store.organizationAccounts(organizationId, liveMode).map(toAccount);
  }

  sandboxOf(accountId: string): Account | undefined {
    const row = this.store.sandboxOf(accountId);
    return row ? toAccount(row) : undefined;
  }

  children(parentId: string, limit: number, offset: number): { rows: Account[]; total: number } {
    return { rows: this.store.children(parentId, limit, offset).map(toAccount), total: this.store.childCount(parentId) };
  }

  updateSettings(accountId: string, patch: Record<string, unknown>): Account {
    return tx(this.db, () => {
      const current = this.account(accountId);
      if (!current) throw new Error(`no account ${accountId}`);
      this.store.updateSettings(accountId, { ...current.settings, ...patch });
      const updated = this.account(accountId)!;
      this.publish(updated);
      return updated;
    });
  }

  /**
   * The account's event format (spec 6.3: `unified`, or `both` for the unified events and their
   * legacy twins), changed by the operator (`posd accounts set --event-formats`). Named by its live
   * id, the account and its sandbox change together, so a shop testing with its test key gets what
   * it will get live; named by a sandbox id, only the sandbox. Returns the accounts changed.
   */
  setEventFormat(accountId: string, format: 'unified' | 'both'): Account[] {
    return tx(this.db, () => {
      const account = this.account(accountId);
      if (!account) throw new Error(`no account ${accountId}`);
      const changed = [account, ...(account.live_mode ? [this.sandboxOf(account.id)].filter((a): a is Account => !!a) : [])];
      for (const a of changed) this.store.updateEventFormat(a.id, format);
      const after = changed.map((a) => this.account(a.id)!);
      for (const a of after) this.publish(a);
      return after;
    });
  }

  /**
   * Spec 4.1: `tax_id`/`tax_name` come from the accepted tax registration document (connected-account
   * verification). Joins the caller's transaction.
   */
  setTaxDetails(accountId: string, taxId: string | null, taxName: string | null): void {
    tx(this.db, () => {
      this.store.updateTax(accountId, taxId, taxName);
      const updated = this.account(accountId);
      if (updated) this.publish(updated);
    });
  }

  /**
   * Makes a key and stores only its hash. Test keys belong to sandboxes and live keys to live
   * accounts: asking for a test key of a live account makes it for that account's sandbox.
   */
  createKey(input: { accountId?: string; organizationId?: string; environment: Environment }): CreatedKey {
    return tx(this.db, () => {
      const kind: KeyKind = input.accountId ? 'account' : 'organization';
      let accountId: string | null = null;
      let organizationId: string;
      if (input.accountId) {
        let account = this.store.account(input.accountId);
        if (!account) throw new Error(`no account ${input.accountId}`);
        if (input.environment === 'test' && account.live_mode === 1) account = this.store.sandboxOf(account.id);
        if (input.environment === 'live' && account?.live_mode === 0) throw new Error(`${input.accountId} is a sandbox: live keys belong to live accounts`);
        if (!account) throw new Error(`${input.accountId} has no sandbox`);
        accountId = account.id;
        organizationId = account.organization_id;
      } else {
        if (!input.organizationId || !this.store.organization(input.organizationId)) {
          throw new Error(`no organization ${input.organizationId ?? '(none)'}`);
        }
        organizationId = input.organizationId;
      }
      const key = KEY_PREFIX[kind][input.environment] + randomToken(32);
      const row = {
        id: newId('key'),
        prefix: keyDisplayPrefix(key),
        hash: hashKey(key),
        kind,
        environment: input.environment,
        account_id: accountId,
        organization_id: organizationId,
        live_mode: input.environment === 'live' ? 1 : 0,
        created_at: this.now(),
      };
      this.store.insertKey(row);
      return { key, prefix: row.prefix, id: row.id, kind, environment: input.environment, account_id: accountId, organization_id: organizationId };
    });
  }

  keys(): Array<Omit<KeyRow, 'hash'>> {
    return this.store.keys().map(({ hash: _hash, ...rest }) => rest);
  }

  /** See AccountsStore.changeVersion: lets callers cache what they read from accounts and keys. */
  changeVersion(): string {
    return this.store.changeVersion();
  }

  keyByHash(hash: string): KeyRow | undefined {
    return this.store.keyByHash(hash);
  }

  revokeKey(prefix: string): boolean {
    return tx(this.db, () => this.store.revokeKey(prefix, this.now()));
  }

  organization(id: string): { id: string; name: string; created_at: string } | undefined {
    return this.store.organization(id);
  }

  /** Key rows with their hashes: what a central hands a synced store (hashes, never keys). */
  keyRowsOfOrganization(organizationId: string): KeyRow[] {
    return this.store.keysOfOrganization(organizationId);
  }

  /** A key row learned from the central: inserted, or its revocation applied (never undone). */
  upsertKeyHash(row: KeyRow): void {
    tx(this.db, () => this.store.upsertKey(row));
  }

  /** Inserts a key whose hash was made elsewhere (a synced store learns hashes, never keys). */
  insertKeyHash(row: Omit<KeyRow, 'revoked_at'>): void {
    tx(this.db, () => this.store.insertKey(row));
  }
}

const services = new WeakMap<Pick<AppContext, 'db' | 'clock'>, AccountsService>();

/**
 * The accounts of a context: its database on its clock, made once per context (its statements are
 * prepared once per database by `accountsStore`). Default options: only the installation's first
 * accounts (daemon start, `posd init`, `posd keys`) are made with `events.unified_since`.
 */
export function accountsOf(ctx: Pick<AppContext, 'db' | 'clock'>): AccountsService {
  let service = services.get(ctx);
  if (!service) services.set(ctx, (service = new AccountsService(ctx.db, ctx.clock)));
  return service;
}

export interface Installation {
  organization_id: string;
  account_id: string;
  sandbox_id: string;
  keys: { live: string; test: string };
}

/** The first run: an organization holding one live account, its sandbox, and one key of each. */
export function initInstallation(
  service: AccountsService,
  opts: { name: string; role: 'store' | 'central'; country?: string; defaultCurrency?: string; eventFormat?: 'unified' | 'both' },
): Installation {
  const org = service.createOrganization(opts.name);
  const { account, sandbox } = service.createAccount({
    name: opts.name,
    organizationId: org.id,
    country: opts.country,
    defaultCurrency: opts.defaultCurrency,
  });
  if (opts.eventFormat) service.setEventFormat(account.id, opts.eventFormat);
  const live = service.createKey({ accountId: account.id, environment: 'live' });
  const test = service.createKey({ accountId: sandbox.id, environment: 'test' });
  service.setMeta('role', opts.role);
  service.setMeta('installed_at', account.created_at);
  return { organization_id: org.id, account_id: account.id, sandbox_id: sandbox.id, keys: { live: live.key, test: test.key } };
}
