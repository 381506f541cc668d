import type { PosdModule } from '../api/module.js';
import { accountsModule } from './accounts/index.js';
import { activitiesModule } from './activities/index.js';
import { bankAccountsModule } from './bank-accounts/index.js';
import { transfersModule } from './transfers/index.js';

/** Every area of the product, in registration order. */
export const MODULES: readonly PosdModule[] = [accountsModule, bankAccountsModule, transfersModule, activitiesModule];
