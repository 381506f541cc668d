import { tx } from '../../src/db/database.js';
import { centralSide } from '../../src/sync/central/sync-store.js';
import type { TestServer } from '../helpers/server.js';
import { addStoreAccount } from '../sync/helpers.js';

export const iso = (ms: number) => new Date(ms).toISOString();

/**
 * `n` store boxes at a central, as its pushes would leave sync_stores (10 accounts, "Tienda 0" to
 * "Tienda 9"): store_0001 pushed 1 min before `now`, store_0002 2 min, and so on; every 100th has
 * been silent for two days, every 50th of the others has a record parked, the 5 before the last never pushed.
 */
export function seedStores(server: TestServer, n: number, now: number): { silent: string[]; parked: string[]; never: string[] } {
  const db = server.daemon.ctx.db;
  const accounts = Array.from({ length: 10 }, (_, i) => addStoreAccount(server, `Tienda ${i}`).accountId);
  const out = { silent: [] as string[], parked: [] as string[], never: [] as string[] };
  tx(db, () => {
    const s = centralSide(db);
    for (let i = 1; i <= n; i++) {
      const id = `store_${String(i).padStart(4, '0')}`;
      s.ensureStore(id, accounts[i % 10], true, iso(now - 30 * 86_400_000));
      if (i > n - 6 && i < n) {
        out.never.push(id);
        // Joined an hour ago: not silent yet.
        db.prepare('UPDATE sync_stores SET created_at = ? WHERE store_id = ?').run(iso(now - 3_600_000), id);
        continue;
      }
      const silent = i % 100 === 0;
      s.setReceived(id, i, iso(silent ? now - 2 * 86_400_000 - i * 1000 : now - i * 60_000), { waiting: silent ? 7 : 0, waiting_since: null });
      if (silent) out.silent.push(id);
      else if (i % 50 === 0) {
        db.prepare('UPDATE sync_stores SET parked_count = 1 WHERE store_id = ?').run(id);
        out.parked.push(id);
      }
    }
  });
  return out;
}
