import { Type, type Static } from '@sinclair/typebox';
import type { Account } from './service.js';

/**
 * An account as the API shows it. Here, below the modules, because more than the accounts routes
 * show one: connected accounts embed it and `account_connection.*` events carry it.
 */
export const AccountSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  tax_id: Type.Union([Type.String(), Type.Null()]),
  tax_name: Type.Union([Type.String(), Type.Null()]),
  country: Type.String(),
  default_currency: Type.String(),
  currencies: Type.Array(Type.String()),
  environment: Type.Union([Type.Literal('live'), Type.Literal('sandbox')]),
  live_mode: Type.Boolean(),
  parent_account_id: Type.Union([Type.String(), Type.Null()]),
  organization_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});
export type AccountView = Static<typeof AccountSchema>;

export function accountView(a: Account): AccountView {
  return {
    id: a.id,
    name: a.name,
    tax_id: a.tax_id,
    tax_name: a.tax_name,
    country: a.country,
    default_currency: a.default_currency,
    currencies: a.currencies,
    environment: a.live_mode ? 'live' : 'sandbox',
    live_mode: a.live_mode,
    parent_account_id: a.parent_account_id,
    organization_id: a.organization_id,
    created_at: a.created_at,
  };
}
