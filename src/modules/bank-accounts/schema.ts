import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../api/pagination.js';

export const BankSchema = Type.Object({ name: Type.String(), code: Type.String() });

export const CURRENCIES = ['GTQ', 'USD'] as const;
export const ACCOUNT_TYPES = ['monetaria', 'ahorro'] as const;

export const BankAccountSchema = Type.Object({
  id: Type.String(),
  holder_name: Type.String(),
  /** Masked: every character but the last 4 digits is `*`. */
  number: Type.String(),
  bank_name: Type.String(),
  bank_code: Type.String(),
  currency: Type.Union(CURRENCIES.map((c) => Type.Literal(c))),
  account_type: Type.Union(ACCOUNT_TYPES.map((c) => Type.Literal(c))),
  is_preferred: Type.Boolean(),
  status: Type.Union([Type.Literal('active'), Type.Literal('archived')]),
  live_mode: Type.Boolean(),
  account_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  archived_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export type BankAccountView = Static<typeof BankAccountSchema>;

export const CreateBankAccountBody = Type.Object({
  holder_name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
  // Digits, optionally grouped with spaces or dashes as banks print them; stored without separators.
  number: Type.String({ minLength: 4, maxLength: 40, pattern: '^[0-9][0-9 -]*[0-9]$' }),
  bank_name: Type.String({ minLength: 1, maxLength: 200 }),
  currency: Type.Union(CURRENCIES.map((c) => Type.Literal(c))),
  account_type: Type.Union(ACCOUNT_TYPES.map((c) => Type.Literal(c))),
  is_preferred: Type.Optional(Type.Boolean()),
});
export type CreateBankAccountInput = Static<typeof CreateBankAccountBody>;

export const UpdateBankAccountBody = Type.Object({ is_preferred: Type.Boolean() }, { additionalProperties: true });

export const BankAccountParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
export const BankAccountListQuery = Type.Object(PageQuery);
