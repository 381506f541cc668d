import type { AppContext } from '../../context.js';
import { perDb } from '../../db/per-db.js';
import { bookingsStore, type BookingsStore } from './store.js';
import type { MoneyPort } from './money-port.js';

/** What the bookings module was created with (`createBookingsModule`). */
export interface SchedulingDeps {
  money: MoneyPort;
}

const stores = perDb(bookingsStore);

export function bookingsStoreOf(ctx: AppContext): BookingsStore {
  return stores(ctx.db);
}

const deps = new WeakMap<AppContext, SchedulingDeps>();

/** Called by the module as the daemon builds its API, so code reached with a context finds its options. */
export function attachSchedulingDeps(ctx: AppContext, d: SchedulingDeps): void {
  deps.set(ctx, d);
}

export function depsOf(ctx: AppContext): SchedulingDeps {
  const d = deps.get(ctx);
  if (!d) throw new Error('scheduling dependencies not set: the bookings module was not registered');
  return d;
}
