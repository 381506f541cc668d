import type { PosdModule } from '../api/module.js';
import { accountsModule } from './accounts/index.js';
import { shippingModule } from './shipping/index.js';
import { couponsModule } from './coupons/index.js';
import { reportsModule } from './reports/index.js';

/** Every area of the product, in registration order. */
export const MODULES: readonly PosdModule[] = [accountsModule, shippingModule, couponsModule, reportsModule];
