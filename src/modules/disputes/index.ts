import type { PosdModule } from '../../api/module.js';
import { disputeRoutes } from './routes.js';
import { disputeFeed, disputePush } from './sync.js';
import { disputeEventExamples } from './views.js';

/** Disputes (chargebacks) on card payments: the held-back amount, the lifecycle, `dispute.*`. */
export const disputesModule: PosdModule = {
  name: 'disputes',
  api: disputeRoutes,
  sync: { push: { dispute: disputePush }, feed: { dispute: disputeFeed } },
  events: disputeEventExamples,
};
