import type { PosdModule } from '../../api/module.js';
import { intentRoutes } from './routes.js';

export const intentsModule: PosdModule = { name: 'intents', api: intentRoutes };
