// INTERIM (terminals branch only): stands in for the money branch's settleCheckoutPayment until it
// is merged; removed before `git merge money`. It records nothing.
import type { AppContext } from '../../context.js';
import type { Account } from '../accounts/service.js';

export function settleCheckoutPayment(_ctx: AppContext, _account: Account, _input: unknown): void {}
