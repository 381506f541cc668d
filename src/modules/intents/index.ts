import type { PosdModule } from '../../api/module.js';
import { intentRoutes } from './routes.js';
import { intentFeed } from './feed.js';
import { intentRowTotals } from './sync.js';

export const intentsModule: PosdModule = { name: 'intents', api: intentRoutes, sync: { feed: { intent: intentFeed }, totals: intentRowTotals } };
