import type { Db } from '../../db/database.js';
import { tx } from '../../db/database.js';
import type { Clock } from '../../clock.js';
import { newId } from '../../ids.js';
import { AccountsService } from '../../accounts/service.js';
import { STATE, syncState } from '../shared/state.js';
import type { BootstrapResponse } from '../shared/wire.js';
import type { CentralPin } from '../../system/tls/central-pin.js';

export interface JoinedStore {
  store_id: string;
  organization_id: string;
  accounts: Array<{ id: string; live_mode: boolean; name: string }>;
  keys: number;
}

/**
 * Makes this box a store of the central: the central's organization and accounts with the same ids,
 * the hashes of their keys (never the keys), a store id, and where to push and with which key, all
 * in one transaction on an empty database.
 */
export function joinCentral(db: Db, clock: Clock, snap: BootstrapResponse, central: { url: string; key: string; pin?: CentralPin }): JoinedStore {
  const accounts = new AccountsService(db, clock);
  return tx(db, () => {
    if (accounts.isInitialised()) throw new Error('this data folder already holds an installation');
    accounts.createOrganization(snap.organization.name, { id: snap.organization.id, createdAt: snap.organization.created_at });
    const live = snap.accounts.filter((a) => a.live_mode);
    // Parents before their connected children, so each child finds its platform.
    live.sort((a, b) => Number(a.parent_account_id !== null) - Number(b.parent_account_id !== null));
    for (const a of live) {
      const sandbox = snap.accounts.find((s) => !s.live_mode && s.sandbox_of === a.id);
      accounts.createAccount({
        id: a.id,
        sandboxId: sandbox?.id,
        name: a.name,
        organizationId: snap.organization.id,
        parentId: a.parent_account_id && live.some((p) => p.id === a.parent_account_id) ? a.parent_account_id : undefined,
        country: a.country,
        defaultCurrency: a.default_currency,
        eventFormat: a.event_format,
        taxId: a.tax_id,
        taxName: a.tax_name,
      });
    }
    for (const k of snap.keys) accounts.upsertKeyHash(k);
    accounts.setMeta('role', 'store');
    accounts.setMeta('installed_at', snap.server_time);
    const store = syncState(db);
    const storeId = newId('store');
    store.setState(STATE.storeId, storeId);
    store.setState(STATE.centralUrl, central.url.replace(/\/$/, ''));
    store.setState(STATE.centralKey, central.key);
    if (central.pin) {
      store.setState(STATE.centralCa, central.pin.ca);
      store.setState(STATE.centralFingerprint, central.pin.fingerprint);
    }
    store.setState(STATE.feedCursor, snap.feed_cursor);
    return {
      store_id: storeId,
      organization_id: snap.organization.id,
      accounts: snap.accounts.map((a) => ({ id: a.id, live_mode: a.live_mode, name: a.name })),
      keys: snap.keys.length,
    };
  });
}
