import type { PosdModule } from '../api/module.js';
import type { Registry } from '../context.js';
import { SyncRegistry } from '../sync/shared/registry.js';
import { catalogueEntry, type EventExample } from '../events/catalogue.js';
import { checkoutHooksOf } from './checkouts/hooks.js';
import { accountsModule } from './accounts/index.js';
import { ledgerModule } from './ledger/index.js';
import { productsModule } from './products/index.js';
import { customersModule } from './customers/index.js';
import { usersModule } from './users/index.js';
import { checkoutsModule } from './checkouts/index.js';
import { intentsModule } from './intents/index.js';
import { paymentsModule } from './payments/index.js';
import { refundsModule } from './refunds/index.js';
import { disputesModule } from './disputes/index.js';
import { cashSalesModule } from './cash-sales/index.js';
import { bankAccountsModule } from './bank-accounts/index.js';
import { transfersModule } from './transfers/index.js';
import { activitiesModule } from './activities/index.js';
import { webhooksModule } from './webhooks/index.js';
import { syncModule } from '../sync/index.js';
import { terminalsModule } from './terminals/index.js';
import { bookablesModule } from './bookables/index.js';
import { bookingsModule } from './bookings/index.js';
import { calendarFeedsModule } from './calendar-feeds/index.js';
import { shippingModule } from './shipping/index.js';
import { couponsModule } from './coupons/index.js';
import { reportsModule } from './reports/index.js';
import { connectedModule } from './connected/index.js';
import { subscriptionsModule } from './subscriptions/index.js';
import { contractsModule } from './contracts/index.js';
import { opsModule } from './ops/index.js';
import { checkoutPageModule } from './checkout-page/index.js';
import { swapsModule } from './swaps/index.js';

/** Every area of the product, in registration order. */
export const MODULES: readonly PosdModule[] = [
  accountsModule,
  ledgerModule,
  productsModule,
  customersModule,
  usersModule,
  checkoutsModule,
  intentsModule,
  paymentsModule,
  refundsModule,
  disputesModule,
  cashSalesModule,
  bankAccountsModule,
  transfersModule,
  activitiesModule,
  webhooksModule,
  syncModule,
  terminalsModule,
  bookablesModule,
  bookingsModule,
  calendarFeedsModule,
  shippingModule,
  couponsModule,
  reportsModule,
  connectedModule,
  subscriptionsModule,
  contractsModule,
  checkoutPageModule,
  opsModule,
  swapsModule,
];

/**
 * The daemon's registry, built once from its modules' declarations: the sync kinds (push, feed,
 * rejections, row totals), the checkout hooks and the events' test-send examples. Sync and the API reach the modules only through it.
 */
export function buildRegistry(modules: readonly PosdModule[]): Registry {
  return { sync: new SyncRegistry(modules), checkout: checkoutHooksOf(modules), events: eventExamplesOf(modules) };
}

/** Each event's example comes from the one module that emits it: two declaring it is a wiring mistake. */
export function eventExamplesOf(modules: readonly PosdModule[]): ReadonlyMap<string, EventExample> {
  const out = new Map<string, EventExample>();
  const owner = new Map<string, string>();
  for (const m of modules) {
    for (const [type, example] of Object.entries(m.events ?? {})) {
      if (!catalogueEntry(type)) throw new Error(`module ${m.name} declares an example of ${type}, which is not in the event catalogue`);
      if (owner.has(type)) throw new Error(`${owner.get(type)} and ${m.name} both declare the example of ${type}`);
      owner.set(type, m.name);
      out.set(type, example);
    }
  }
  return out;
}
