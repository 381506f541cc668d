import type { PosdModule } from '../api/module.js';
import { accountsModule } from './accounts/index.js';
import { terminalsModule } from './terminals/index.js';
import { terminalCommandsModule } from './terminal-commands/index.js';

/** Every area of the product, in registration order. */
export const MODULES: readonly PosdModule[] = [accountsModule, terminalsModule, terminalCommandsModule];
