import type { PosdModule } from '../../../api/module.js';
import { commandRoutes } from './routes.js';

export const terminalCommandsModule: PosdModule = { name: 'terminal-commands', api: commandRoutes };
