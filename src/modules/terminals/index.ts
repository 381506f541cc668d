import type { PosdModule } from '../../api/module.js';
import { registerTerminalLink, terminalWorkers } from './link/index.js';
import { terminalRoutes } from './routes.js';

/** The terminal registry, plus the daemon plumbing of the links (`/terminals/link`, serial ports). */
export const terminalsModule: PosdModule = {
  name: 'terminals',
  api: terminalRoutes,
  root: registerTerminalLink,
  workers: terminalWorkers,
};
