import Database from 'better-sqlite3';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import { centralPin, centralTarget } from '../sync/status.js';
import type { CentralPin } from '../system/tls/central-pin.js';
import { STATE, syncState } from '../sync/shared/state.js';
import { centralHoldings, planRejoin } from '../sync/store/rejoin.js';
import { CentralClient } from '../sync/store/transport.js';

/** How long `posd restore` waits for the central's answer before saying it will ask at the next start. */
const ASK_MS = 5000;

/**
 * What a restored store will do about its central at the next start, in plain words, for `posd
 * restore`: the backup is older than what the central holds of this store, so the daemon takes back
 * what the backup lacks and continues after the central's sequence (sync/store/rejoin.ts). Nothing is
 * written here: the daemon does it, in one transaction, before it pushes. Lines to print; none for
 * a box that does not sync.
 */
export async function rejoinNote(config: Config, file: string): Promise<string[]> {
  if (config.role === 'central') return [];
  let db: Db;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch {
    return [];
  }
  try {
    let target: { url: string; key: string } | null;
    let storeId: string | undefined;
    let pin: CentralPin | undefined;
    try {
      target = centralTarget(config, db);
      pin = centralPin(config, db);
      storeId = syncState(db).state(STATE.storeId);
    } catch {
      return []; // no sync tables this posd can read: the start migrates and says the rest
    }
    if (!target || !storeId) return [];
    const acked = Number(syncState(db).state(STATE.ackedSeq) ?? 0);
    const client = new CentralClient(target.url, target.key, { timeoutMs: Math.min(ASK_MS, config.sync.request_timeout_ms), pin });
    try {
      const held = await centralHoldings(client, storeId, acked, AbortSignal.timeout(ASK_MS));
      const plan = planRejoin(db, held);
      if (plan.centralBehind) {
        return [
          `  this store synced with ${target.url} (store ${storeId}); the central holds its records only up to seq ${held.appliedSeq}, ` +
            `less than this backup: at next start it pushes again from seq ${held.appliedSeq + 1}`,
        ];
      }
      const moved = plan.moved ? `, push the ${plan.moved} records the central never got` : '';
      return [
        `  this store synced with ${target.url} (store ${storeId}); at next start it will fetch ${plan.takenBack} records the backup lacks` +
          `${moved} and continue from sequence ${plan.nextSeq}`,
      ];
    } catch (err) {
      return [
        `  this store syncs with ${target.url} (store ${storeId}); the central could not be asked now (${(err as Error).message}): ` +
          "at next start, before it pushes, the store fetches the records the backup lacks and continues after the central's sequence; it sells meanwhile",
      ];
    } finally {
      await client.close();
    }
  } finally {
    db.close();
  }
}
