import type { PosdModule } from '../../api/module.js';
import { accountRoutes } from './routes.js';
import { accountFeed } from './feed.js';

export const accountsModule: PosdModule = { name: 'accounts', api: accountRoutes, sync: { feed: { account: accountFeed } } };
