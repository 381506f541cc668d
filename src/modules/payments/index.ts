import type { PosdModule } from '../../api/module.js';
import { paymentRoutes } from './routes.js';
import { applyCentralPaymentTaxInvoiceUrl } from './service.js';
import { paymentPushKinds } from './sync.js';
import { paymentCheckoutHooks } from './checkout-hook.js';
import { taxInvoiceUrlFeed } from '../tax-invoices/service.js';

export const paymentsModule: PosdModule = {
  name: 'payments',
  api: paymentRoutes,
  checkout: paymentCheckoutHooks,
  sync: {
    push: paymentPushKinds,
    // The central's invoice URL lands on the intent and, for a payment, on its payment intent.
    feed: { tax_invoice_url: taxInvoiceUrlFeed(applyCentralPaymentTaxInvoiceUrl) },
  },
};
