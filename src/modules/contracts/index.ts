import type { PosdModule } from '../../api/module.js';
import { contractRoutes } from './routes.js';
import { signingRoutes } from './signing-routes.js';
import { contractsWorker } from './worker.js';
import { contractPush } from './sync.js';
import { contractCheckoutHooks } from './checkout-hook.js';
import { contractEventExamples } from './events.js';

export { ContractsService, sha256 } from './service.js';
export { contractsWorker } from './worker.js';
export { htmlToText } from './pdf.js';

export const contractsModule: PosdModule = {
  name: 'contracts',
  api: contractRoutes,
  root: signingRoutes,
  workers: (ctx) => [contractsWorker(ctx)],
  sync: { push: { contract: contractPush } },
  checkout: contractCheckoutHooks,
  events: contractEventExamples,
};
