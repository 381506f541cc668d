import type { PosdModule } from '../api/module.js';
import { accountsModule } from './accounts/index.js';
import { syncModule } from '../sync/index.js';
import { webhooksModule } from './webhooks/index.js';

/** Every area of the product, in registration order. */
export const MODULES: readonly PosdModule[] = [accountsModule, webhooksModule, syncModule];
