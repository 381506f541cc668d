import type { PosdModule } from '../../api/module.js';
import { activityRoutes } from './routes.js';

export const activitiesModule: PosdModule = { name: 'activities', api: activityRoutes };
