import type { PosdModule } from '../../api/module.js';
import { couponRoutes } from './routes.js';
import { couponFeed } from './feed.js';
import { couponPush, redemptionPush } from './sync.js';
import { couponCheckoutHooks } from './checkout-hook.js';

export { applyCoupons, redeemCoupons, type CheckoutDraft, type CouponResult, type AppliedCoupon } from './apply.js';
export { CouponsService } from './service.js';

export const couponsModule: PosdModule = {
  name: 'coupons',
  api: couponRoutes,
  sync: { push: { coupon: couponPush, coupon_redemption: redemptionPush }, feed: { coupon: couponFeed } },
  checkout: couponCheckoutHooks,
};
export { recordCheckoutCoupons, checkoutCoupons, checkoutCouponCodes, priceWithCoupons, redeemCheckoutCoupons } from './checkout-hook.js';
