import { Value } from '@sinclair/typebox/value';
import type { FeedApplier } from '../../sync/shared/registry.js';
import { accountsOf } from '../../accounts/service.js';
import { applyBankAccountState, BankAccountPayload, type BankAccountRecord } from './sync.js';

// A bank account added, preferred or archived at the central or at another box of the account:
// brought to the central's state here, by id. No sync record, no events (they were the central's).
export const bankAccountFeed: FeedApplier = (ctx, change) => {
  const p = { change: 'created', ...change.payload };
  if (!Value.Check(BankAccountPayload, p) || !change.account_id) return;
  const record = p as unknown as BankAccountRecord;
  const account = accountsOf(ctx).account(change.account_id);
  if (!account || account.live_mode !== record.bank_account.live_mode) return;
  applyBankAccountState(ctx, account.id, record.bank_account);
};
