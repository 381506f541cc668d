import type { PosdModule } from '../../api/module.js';
import { couponRoutes } from './routes.js';

export { applyCoupons, redeemCoupons, type CheckoutDraft, type CouponResult, type AppliedCoupon } from './apply.js';
export { CouponsService } from './service.js';

export const couponsModule: PosdModule = { name: 'coupons', api: couponRoutes };
export { recordCheckoutCoupons, checkoutCoupons, checkoutCouponCodes, priceWithCoupons, redeemCheckoutCoupons } from './checkout-hook.js';
