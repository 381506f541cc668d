import type { AppContext } from '../../context.js';
import { bookingsStore, type BookingsStore } from './store.js';
import type { MoneyPort } from './money-port.js';

export interface SchedulingDeps {
  money: MoneyPort;
}

const stores = new WeakMap<object, BookingsStore>();
const deps = new WeakMap<object, SchedulingDeps>();

export function bookingsStoreOf(ctx: AppContext): BookingsStore {
  let s = stores.get(ctx.db);
  if (!s) stores.set(ctx.db, (s = bookingsStore(ctx.db)));
  return s;
}

/** Set once by the module when the daemon starts; a test may replace a part (fault injection at the money boundary). */
export function setSchedulingDeps(ctx: AppContext, d: SchedulingDeps): void {
  deps.set(ctx, d);
}

export function depsOf(ctx: AppContext): SchedulingDeps {
  const d = deps.get(ctx);
  if (!d) throw new Error('scheduling dependencies not set: the bookings module was not registered');
  return d;
}
