import type { PosdModule } from '../../api/module.js';
import { connectedRoutes } from './routes.js';
import { commissionInvoicer } from './invoicer.js';
import { connectedAccountPush, verificationPush } from './sync.js';
import { connectedEventExamples } from './events.js';

export { ConnectedService } from './service.js';
export { commissionInvoicer, CommissionInvoicer } from './invoicer.js';
export { validCui, validNit, reviewDocuments } from './documents.js';

export const connectedModule: PosdModule = {
  name: 'connected-accounts',
  api: connectedRoutes,
  workers: (ctx) => [commissionInvoicer(ctx)],
  sync: { push: { connected_account: connectedAccountPush, connected_account_verification: verificationPush } },
  events: connectedEventExamples,
};
