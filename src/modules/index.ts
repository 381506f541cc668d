import type { PosdModule } from '../api/module.js';
import { accountsModule } from './accounts/index.js';
import { ledgerModule } from './ledger/index.js';
import { productsModule } from './products/index.js';
import { customersModule } from './customers/index.js';
import { usersModule } from './users/index.js';
import { checkoutsModule } from './checkouts/index.js';
import { intentsModule } from './intents/index.js';
import { paymentsModule } from './payments/index.js';
import { refundsModule } from './refunds/index.js';
import { cashSalesModule } from './cash-sales/index.js';
import { bankAccountsModule } from './bank-accounts/index.js';
import { transfersModule } from './transfers/index.js';
import { activitiesModule } from './activities/index.js';
import { webhooksModule } from './webhooks/index.js';
import { syncModule } from '../sync/index.js';

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
  cashSalesModule,
  bankAccountsModule,
  transfersModule,
  activitiesModule,
  webhooksModule,
  syncModule,
];
