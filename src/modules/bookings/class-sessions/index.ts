import type { PosdModule } from '../../../api/module.js';
import { classSessionRoutes } from './routes.js';

export const classSessionsModule: PosdModule = { name: 'class-sessions', api: classSessionRoutes };
