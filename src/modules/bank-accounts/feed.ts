import { registerFeedApplier } from '../../sync/feed.js';
import { AccountsService } from '../../accounts/service.js';
import { applyBankAccountState, isBankAccountRecord } from './sync.js';

// A bank account added, preferred or archived at the central or at another box of the account:
// brought to the central's state here, by id. No sync record, no events (they were the central's).
registerFeedApplier('bank_account', (ctx, change) => {
  const p = { change: 'created', ...change.payload };
  if (!isBankAccountRecord(p) || !change.account_id) return;
  const account = new AccountsService(ctx.db, ctx.clock).account(change.account_id);
  if (!account || account.live_mode !== p.bank_account.live_mode) return;
  applyBankAccountState(ctx, account.id, p.bank_account);
});
