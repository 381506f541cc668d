import type pg from 'pg';
import type { AccountSnapshot, KeySnapshot } from '../shared/wire.js';

/**
 * An account as the fronts know it (sync_accounts): bootstrap's snapshot plus its organization and
 * currencies (the receipt checks'; absent on a row published before they were).
 */
export type SyncAccountRow = AccountSnapshot & { organization_id: string; currencies?: string[] };

/**
 * The read models the core publishes for the fronts (bootstrap, auth, the push scope), each an
 * `unnest` upsert by id: publishing the same rows again changes nothing, so the core may publish
 * after every commit that changes accounts or keys, and everything once at start.
 */
export async function publishOrganizations(pool: pg.Pool, rows: ReadonlyArray<{ id: string; name: string; created_at: string }>): Promise<void> {
  if (!rows.length) return;
  await pool.query(
    `INSERT INTO sync_organizations (id, name, created_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
     ON CONFLICT (id) DO UPDATE SET name = excluded.name`,
    [rows.map((r) => r.id), rows.map((r) => r.name), rows.map((r) => r.created_at)],
  );
}

export async function publishAccounts(pool: pg.Pool, rows: readonly SyncAccountRow[]): Promise<void> {
  if (!rows.length) return;
  const col = <K extends keyof SyncAccountRow>(k: K) => rows.map((r) => r[k]);
  await pool.query(
    `INSERT INTO sync_accounts (id, organization_id, live_mode, name, sandbox_of, parent_account_id, tax_id, tax_name, country, default_currency, event_format, created_at, currencies)
     SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, sandbox_of = excluded.sandbox_of, parent_account_id = excluded.parent_account_id,
       tax_id = excluded.tax_id, tax_name = excluded.tax_name, country = excluded.country, default_currency = excluded.default_currency,
       event_format = excluded.event_format, currencies = excluded.currencies`,
    [
      col('id'),
      col('organization_id'),
      col('live_mode'),
      col('name'),
      col('sandbox_of'),
      col('parent_account_id'),
      col('tax_id'),
      col('tax_name'),
      col('country'),
      col('default_currency'),
      col('event_format'),
      col('created_at'),
      rows.map((r) => (r.currencies ? JSON.stringify(r.currencies) : null)),
    ],
  );
}

/** Key hashes (never keys) for auth at the front; a revocation is the same row with `revoked_at`. */
export async function publishKeys(pool: pg.Pool, rows: readonly KeySnapshot[]): Promise<void> {
  if (!rows.length) return;
  const col = <K extends keyof KeySnapshot>(k: K) => rows.map((r) => r[k]);
  await pool.query(
    `INSERT INTO sync_keys (id, prefix, hash, kind, environment, account_id, organization_id, live_mode, created_at, revoked_at)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[], $9::text[], $10::text[])
     ON CONFLICT (id) DO UPDATE SET revoked_at = excluded.revoked_at`,
    [
      col('id'),
      col('prefix'),
      col('hash'),
      col('kind'),
      col('environment'),
      col('account_id'),
      col('organization_id'),
      rows.map((r) => r.live_mode === 1),
      col('created_at'),
      col('revoked_at'),
    ],
  );
}

/** The key with this hash (the front hashes the presented key as the core's Authenticator does), or undefined. */
export async function keyByHash(pool: pg.Pool, hash: string): Promise<KeySnapshot | undefined> {
  const res = await pool.query<Omit<KeySnapshot, 'live_mode'> & { live_mode: boolean }>(
    'SELECT id, prefix, hash, kind, environment, account_id, organization_id, live_mode, created_at, revoked_at FROM sync_keys WHERE hash = $1',
    [hash],
  );
  const r = res.rows[0];
  return r ? { ...r, live_mode: r.live_mode ? 1 : 0 } : undefined;
}

/**
 * The accounts one store key acts for, as `syncScope` (src/sync/central/service.ts) computes them
 * on the core: the key's account, its (first) sandbox if it is live, its connected children and
 * theirs, in that order, from `sync_accounts` in one statement.
 */
export async function scopeOf(pool: pg.Pool | pg.PoolClient, keyAccountId: string): Promise<SyncAccountRow[]> {
  const res = await pool.query<Omit<SyncAccountRow, 'currencies'> & { ord: number; currencies: string | null }>(
    `WITH k AS (SELECT * FROM sync_accounts WHERE id = $1),
     kids AS (SELECT * FROM sync_accounts WHERE parent_account_id = $1),
     owners AS (SELECT id, live_mode, 0 AS ord, created_at FROM k UNION ALL SELECT id, live_mode, 2, created_at FROM kids),
     sandboxes AS (
       SELECT DISTINCT ON (s.sandbox_of) s.*, o.ord + 1 AS ord, o.created_at AS owner_created, o.id AS owner
       FROM sync_accounts s JOIN owners o ON o.live_mode AND s.sandbox_of = o.id
       ORDER BY s.sandbox_of, s.created_at
     )
     SELECT * FROM (
       SELECT *, 0 AS ord, created_at AS owner_created, id AS owner FROM k
       UNION ALL SELECT *, 2, created_at, id FROM kids
       UNION ALL SELECT * FROM sandboxes
     ) u ORDER BY u.owner = $1 DESC, u.owner_created, u.owner, u.ord`,
    [keyAccountId],
  );
  const seen = new Set<string>();
  const out: SyncAccountRow[] = [];
  for (const r of res.rows) {
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    out.push({
      id: r.id,
      organization_id: r.organization_id,
      live_mode: r.live_mode,
      name: r.name,
      sandbox_of: r.sandbox_of,
      parent_account_id: r.parent_account_id,
      tax_id: r.tax_id,
      tax_name: r.tax_name,
      country: r.country,
      default_currency: r.default_currency,
      event_format: r.event_format,
      created_at: r.created_at,
      ...(r.currencies ? { currencies: JSON.parse(r.currencies) as string[] } : {}),
    });
  }
  return out;
}
