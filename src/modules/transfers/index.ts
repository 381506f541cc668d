import type { PosdModule } from '../../api/module.js';
import { transferRoutes } from './routes.js';
import { transferPushKinds } from './sync.js';
import { transferEventExamples } from './events.js';
import { transferSetupHooks } from './checkout-hook.js';

/** Peer-to-peer transfers between accounts of the installation, and withdrawals to bank accounts. */
export const transfersModule: PosdModule = {
  name: 'transfers',
  api: transferRoutes,
  sync: { push: transferPushKinds },
  events: transferEventExamples,
  checkout: transferSetupHooks,
};
