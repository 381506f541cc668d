import { Type, type Static } from '@sinclair/typebox';
import { PageQuery } from '../../../api/pagination.js';
import { MAX_LINE_CENTS } from '../../../money.js';

const NullableString = (opts: Parameters<typeof Type.String>[0] = {}) => Type.Union([Type.String(opts), Type.Null()]);

export const Currency = Type.Union([Type.Literal('GTQ'), Type.Literal('USD')]);
export const Status = Type.Union(
  ['pending', 'dispatched', 'cancel_requested', 'canceled', 'superseded', 'stored', 'consumed', 'failed'].map((s) => Type.Literal(s)),
);

export const CommandItem = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  amount_in_cents: Type.Integer({ minimum: 1, maximum: MAX_LINE_CENTS }),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 9, default: 1 })),
});

export const CreateCommandBody = Type.Object({
  terminal_id: Type.String({ minLength: 1, maxLength: 64 }),
  external_id: Type.String({ minLength: 1, maxLength: 255 }),
  amount_in_cents: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LINE_CENTS })),
  /** Decimal amount in currency units (150.5 = 15050 cents); never together with amount_in_cents. */
  amount: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: MAX_LINE_CENTS / 100 })),
  currency: Type.Optional(Currency),
  installments: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 48 }), Type.Null()])),
  description: Type.Optional(NullableString({ maxLength: 255 })),
  print_receipt: Type.Optional(Type.Boolean()),
  show_post_payment_screens: Type.Optional(Type.Boolean()),
  tax_id: Type.Optional(NullableString({ maxLength: 64 })),
  items: Type.Optional(Type.Array(CommandItem, { minItems: 1, maxItems: 100 })),
});
export type CreateCommandBody = Static<typeof CreateCommandBody>;

/** Spec 2.6, every field, plus created_at and updated_at. */
export const CommandSchema = Type.Object(
  {
    id: Type.String(),
    external_id: Type.String(),
    status: Status,
    final: Type.Boolean(),
    terminal_id: Type.String(),
    amount_in_cents: Type.Integer(),
    currency: Type.String(),
    installments: Type.Union([Type.Integer(), Type.Null()]),
    description: NullableString(),
    show_post_payment_screens: Type.Boolean(),
    print_receipt: Type.Boolean(),
    tax_id: NullableString(),
    terminal_availability: Type.Union([Type.Literal('available'), Type.Literal('unavailable')]),
    checkout_id: Type.String(),
    checkout_url: NullableString(),
    checkout_status: Type.String(),
    cancellation_requested_at: NullableString({ format: 'date-time' }),
    canceled_at: NullableString({ format: 'date-time' }),
    account_id: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
  },
  { $id: 'TerminalSessionCommand' },
);
export type CommandView = Static<typeof CommandSchema>;

/** 409 on DELETE of a final command: the command body plus the error fields (spec 4.9). */
export const FinalCommandErrorSchema = Type.Object({
  ...CommandSchema.properties,
  message: Type.String(),
  code: Type.String(),
});

export const CommandIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const ListCommandsQuery = Type.Object({
  ...PageQuery,
  terminal_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  status: Type.Optional(Status),
  external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
});
