import type { PosdModule } from '../../api/module.js';
import { registerTerminalLink, terminalWorkers } from './link/index.js';
import { terminalRoutes } from './routes.js';
import { commandRoutes } from './commands/routes.js';
import { offlinePolicyChangePush, storedPaymentPush } from './stored/sync.js';

/**
 * The terminal registry and its commands (charges sent to a terminal), plus the daemon plumbing of
 * the links (`/terminals/link`, serial ports).
 */
export const terminalsModule: PosdModule = {
  name: 'terminals',
  api(app, ctx) {
    terminalRoutes(app, ctx);
    commandRoutes(app, ctx);
  },
  root: registerTerminalLink,
  workers: terminalWorkers,
  // A stored (offline) card's final state reaches the central (docs/stored-payments.md).
  // ...and every audited change of the offline policy, checked at receipt (stored/sync.ts).
  sync: { push: { stored_payment: storedPaymentPush, offline_policy_change: offlinePolicyChangePush } },
};
