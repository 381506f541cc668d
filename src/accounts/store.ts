import type { Db } from '../db/database.js';
import { perDb } from '../db/per-db.js';
import { dataVersionReader } from '../db/data-version.js';
import { ringFeed } from '../outbox/feed-changes.js';
import { preparedOnUse } from '../db/statements.js';

export interface AccountRow {
  id: string;
  account_id: string;
  live_mode: number;
  organization_id: string;
  name: string;
  sandbox_of: string | null;
  parent_account_id: string | null;
  tax_id: string | null;
  tax_name: string | null;
  country: string;
  default_currency: string;
  currencies: string;
  event_format: 'unified' | 'both';
  settings: string;
  created_at: string;
}

export interface KeyRow {
  id: string;
  prefix: string;
  hash: string;
  kind: 'account' | 'organization';
  environment: 'live' | 'test';
  account_id: string | null;
  organization_id: string;
  live_mode: number;
  created_at: string;
  revoked_at: string | null;
}

export interface OrganizationRow {
  id: string;
  name: string;
  created_at: string;
}

/** All SQL of accounts, organizations and keys. */
export class AccountsStore {
  private readonly stmts;
  /** Bumped by every write here; with SQLite's data_version it tells caches when to forget. */
  private writes = 0;
  private readonly dataVersion: () => number;
  /** The last version given, kept so an unchanged one is not a new string per request. */
  private versionOf: [writes: number, dataVersion: number, version: string] = [-1, -1, ''];

  constructor(private readonly db: Db) {
    this.dataVersion = dataVersionReader(db);
    this.stmts = preparedOnUse({
      insertOrg: () => db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (@id, @name, @created_at)'),
      getOrg: () => db.prepare('SELECT * FROM organizations WHERE id = ?'),
      listOrgs: () => db.prepare('SELECT * FROM organizations ORDER BY created_at, id'),
      insertAccount: () =>
        db.prepare(
          `INSERT INTO accounts (id, account_id, live_mode, organization_id, name, sandbox_of, parent_account_id,
           tax_id, tax_name, country, default_currency, currencies, event_format, settings, created_at)
         VALUES (@id, @id, @live_mode, @organization_id, @name, @sandbox_of, @parent_account_id,
           @tax_id, @tax_name, @country, @default_currency, @currencies, @event_format, @settings, @created_at)`,
        ),
      getAccount: () => db.prepare('SELECT * FROM accounts WHERE id = ?'),
      listAccounts: () => db.prepare('SELECT * FROM accounts ORDER BY created_at, id'),
      listOrgAccounts: () => db.prepare('SELECT * FROM accounts WHERE organization_id = ? AND live_mode = ? ORDER BY created_at, id'),
      listChildren: () => db.prepare('SELECT * FROM accounts WHERE parent_account_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?'),
      countChildren: () => db.prepare('SELECT count(*) AS n FROM accounts WHERE parent_account_id = ?'),
      sandboxOf: () => db.prepare('SELECT * FROM accounts WHERE sandbox_of = ? ORDER BY created_at LIMIT 1'),
      updateSettings: () => db.prepare('UPDATE accounts SET settings = ? WHERE id = ?'),
      updateTax: () => db.prepare('UPDATE accounts SET tax_id = ?, tax_name = ? WHERE id = ?'),
      updateEventFormat: () => db.prepare('UPDATE accounts SET event_format = ? WHERE id = ?'),
      insertKey: () =>
        db.prepare(
          `INSERT INTO api_keys (id, prefix, hash, kind, environment, account_id, organization_id, live_mode, created_at)
         VALUES (@id, @prefix, @hash, @kind, @environment, @account_id, @organization_id, @live_mode, @created_at)`,
        ),
      keyByHash: () => db.prepare('SELECT * FROM api_keys WHERE hash = ?'),
      keyByPrefix: () => db.prepare('SELECT * FROM api_keys WHERE prefix = ?'),
      listKeys: () => db.prepare('SELECT * FROM api_keys ORDER BY created_at, id'),
      keysOfOrganization: () => db.prepare('SELECT * FROM api_keys WHERE organization_id = ? ORDER BY created_at, id'),
      upsertKey: () =>
        db.prepare(
          `INSERT INTO api_keys (id, prefix, hash, kind, environment, account_id, organization_id, live_mode, created_at, revoked_at)
         VALUES (@id, @prefix, @hash, @kind, @environment, @account_id, @organization_id, @live_mode, @created_at, @revoked_at)
         ON CONFLICT(id) DO UPDATE SET revoked_at = coalesce(api_keys.revoked_at, excluded.revoked_at)`,
        ),
      revokeKey: () => db.prepare('UPDATE api_keys SET revoked_at = ? WHERE prefix = ? AND revoked_at IS NULL'),
      countOrgs: () => db.prepare('SELECT count(*) AS n FROM organizations'),
      getMeta: () => db.prepare('SELECT value FROM meta WHERE key = ?'),
      setMeta: () => db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value'),
    });
  }

  insertOrganization(row: OrganizationRow): void {
    this.writes++;
    this.stmts.insertOrg.run(row);
  }
  organization(id: string): OrganizationRow | undefined {
    return this.stmts.getOrg.get(id) as OrganizationRow | undefined;
  }
  organizations(): OrganizationRow[] {
    return this.stmts.listOrgs.all() as OrganizationRow[];
  }
  organizationCount(): number {
    return (this.stmts.countOrgs.get() as { n: number }).n;
  }
  insertAccount(row: Omit<AccountRow, 'account_id'>): void {
    this.writes++;
    this.stmts.insertAccount.run(row);
  }
  account(id: string): AccountRow | undefined {
    return this.stmts.getAccount.get(id) as AccountRow | undefined;
  }
  accounts(): AccountRow[] {
    return this.stmts.listAccounts.all() as AccountRow[];
  }
  organizationAccounts(organizationId: string, liveMode: boolean): AccountRow[] {
    return this.stmts.listOrgAccounts.all(organizationId, liveMode ? 1 : 0) as AccountRow[];
  }
  children(parentId: string, limit: number, offset: number): AccountRow[] {
    return this.stmts.listChildren.all(parentId, limit, offset) as AccountRow[];
  }
  childCount(parentId: string): number {
    return (this.stmts.countChildren.get(parentId) as { n: number }).n;
  }
  sandboxOf(accountId: string): AccountRow | undefined {
    return this.stmts.sandboxOf.get(accountId) as AccountRow | undefined;
  }
  updateSettings(accountId: string, settings: Record<string, unknown>): void {
    this.writes++;
    this.stmts.updateSettings.run(JSON.stringify(settings), accountId);
  }
  updateEventFormat(accountId: string, format: 'unified' | 'both'): void {
    this.writes++;
    this.stmts.updateEventFormat.run(format, accountId);
  }
  updateTax(accountId: string, taxId: string | null, taxName: string | null): void {
    this.writes++;
    this.stmts.updateTax.run(taxId, taxName, accountId);
  }
  insertKey(row: Omit<KeyRow, 'revoked_at'>): void {
    this.writes++;
    this.stmts.insertKey.run(row);
    // At a central a trigger publishes the key to the feed (baseline.sql): wake the waiting boxes.
    ringFeed(this.db, row.organization_id);
  }
  /**
   * Changes whenever accounts or keys may have changed: a write through this store, or a commit
   * by another connection (`posd keys revoke` beside the running daemon).
   */
  changeVersion(): string {
    const dv = this.dataVersion();
    if (dv !== this.versionOf[1] || this.writes !== this.versionOf[0]) this.versionOf = [this.writes, dv, `${this.writes}:${dv}`];
    return this.versionOf[2];
  }

  keyByHash(hash: string): KeyRow | undefined {
    return this.stmts.keyByHash.get(hash) as KeyRow | undefined;
  }
  keyByPrefix(prefix: string): KeyRow | undefined {
    return this.stmts.keyByPrefix.get(prefix) as KeyRow | undefined;
  }
  keys(): KeyRow[] {
    return this.stmts.listKeys.all() as KeyRow[];
  }
  keysOfOrganization(organizationId: string): KeyRow[] {
    return this.stmts.keysOfOrganization.all(organizationId) as KeyRow[];
  }
  /** A key learned from elsewhere; a revocation is never undone. */
  upsertKey(row: KeyRow): void {
    this.writes++;
    this.stmts.upsertKey.run(row);
    ringFeed(this.db, row.organization_id);
  }
  revokeKey(prefix: string, at: string): boolean {
    this.writes++;
    const revoked = this.stmts.revokeKey.run(at, prefix).changes === 1;
    if (revoked) ringFeed(this.db, null);
    return revoked;
  }
  meta(key: string): string | undefined {
    return (this.stmts.getMeta.get(key) as { value: string } | undefined)?.value;
  }
  setMeta(key: string, value: string): void {
    this.stmts.setMeta.run(key, value);
  }
}

/** One store per database, so statements are prepared once. */
export const accountsStore = perDb((db) => new AccountsStore(db));
