import type { Db } from '../../db/database.js';

export interface ShippingSettingsRow {
  account_id: string;
  live_mode: number;
  enabled: number;
  catalogue: string;
  updated_at: string;
}

/** All SQL of store shipping: one settings row per account. */
export class ShippingStore {
  private readonly get;
  private readonly upsert;

  constructor(db: Db) {
    this.get = db.prepare('SELECT * FROM store_shipping_settings WHERE account_id = ?');
    this.upsert = db.prepare(
      `INSERT INTO store_shipping_settings (account_id, live_mode, enabled, catalogue, updated_at)
       VALUES (@account_id, @live_mode, @enabled, @catalogue, @updated_at)
       ON CONFLICT(account_id) DO UPDATE SET enabled = excluded.enabled, catalogue = excluded.catalogue,
         updated_at = excluded.updated_at`,
    );
  }

  settings(accountId: string): ShippingSettingsRow | undefined {
    return this.get.get(accountId) as ShippingSettingsRow | undefined;
  }

  save(row: ShippingSettingsRow): void {
    this.upsert.run(row);
  }
}
