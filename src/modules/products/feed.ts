import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { applyCentralProduct, type FeedProduct } from './service.js';

// The catalogue is managed at the central: a product made or changed there (name, status, new
// prices) is upserted here with the central's ids, so the counter sells it. No events.
export const productFeed: FeedApplier = (ctx, change) => {
  const p = change.payload as unknown as FeedProduct;
  if (typeof p.product?.id !== 'string' || !Array.isArray(p.prices)) return;
  const account = accountsOf(ctx).account(p.product.account_id);
  if (!account || account.live_mode !== (p.product.live_mode === 1)) return;
  applyCentralProduct(ctx, p);
};
