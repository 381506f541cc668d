import type { PosdModule } from '../../api/module.js';
import { swapEventExamples } from './events.js';
import { swapRoutes } from './routes.js';

/** Swaps between a dollar balance and USDC (docs/events.md "Swaps and USDC balances"). */
export const swapsModule: PosdModule = {
  name: 'swaps',
  api: swapRoutes,
  events: swapEventExamples,
};
