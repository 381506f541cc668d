import type { PosdModule } from '../../api/module.js';
import { bookablesRoutes } from './routes.js';
import { bookableFeed } from './feed.js';

export const bookablesModule: PosdModule = { name: 'bookables', api: bookablesRoutes, sync: { feed: { bookable: bookableFeed } } };
