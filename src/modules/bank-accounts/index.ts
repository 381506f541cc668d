import type { PosdModule } from '../../api/module.js';
import { bankAccountRoutes } from './routes.js';
import { bankAccountFeed } from './feed.js';
import { bankAccountPush } from './sync.js';

export const bankAccountsModule: PosdModule = {
  name: 'bank-accounts',
  api: bankAccountRoutes,
  sync: { push: { bank_account: bankAccountPush }, feed: { bank_account: bankAccountFeed } },
};
