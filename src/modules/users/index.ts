import type { PosdModule } from '../../api/module.js';
import { userRoutes } from './routes.js';

export const usersModule: PosdModule = { name: 'users', api: userRoutes };
