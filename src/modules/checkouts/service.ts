// INTERIM (terminals branch only): stands in for the money branch's createCheckout until it is
// merged; removed before `git merge money`. It persists nothing.
import type { AppContext } from '../../context.js';
import type { Account } from '../accounts/service.js';
import { newId } from '../../ids.js';
import { publicBaseUrl } from '../../config.js';

export function createCheckout(ctx: AppContext, _account: Account, _input: unknown): { id: string; url: string } {
  const id = newId('ch');
  return { id, url: `${publicBaseUrl(ctx.config)}/checkouts/${id}` };
}
