import type { AppContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { ContractsStore } from './store.js';
import type { CheckoutHooks } from '../checkouts/schema.js';

/** Spec 4.8: a contract's checkout accepts no payment until the contract is signed. */
export function assertContractAllowsPayment(ctx: AppContext, checkoutId: string): void {
  const contract = new ContractsStore(ctx.db).byCheckout(checkoutId);
  if (contract && contract.status !== 'signed') throw new ApiError('contract_unsigned', { extra: { contract_id: contract.id, status: contract.status } });
}

export const contractCheckoutHooks: CheckoutHooks = { beforePay: assertContractAllowsPayment };
