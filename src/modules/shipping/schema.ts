import { Type, type Static } from '@sinclair/typebox';

const Currency = Type.Union([Type.Literal('GTQ'), Type.Literal('USD')]);
const Cents = Type.Integer({ minimum: 0, maximum: 100_000_000 });
const Days = Type.Integer({ minimum: 0, maximum: 365 });
const NullableDays = Type.Union([Days, Type.Null()]);

/** Spec 2.9 destination, as GET /store_shipping lists it. */
export const DestinationSchema = Type.Object({
  code: Type.String(),
  name: Type.String(),
  requires_region: Type.Boolean(),
});

/** Spec 2.9 option, as a quote returns it. */
export const OptionSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  kind: Type.Union([Type.Literal('delivery'), Type.Literal('pickup')]),
  amount_in_cents: Type.Integer(),
  currency: Type.String(),
  free_from_amount_in_cents: Type.Union([Type.Integer(), Type.Null()]),
  minimum_business_days: Type.Union([Type.Integer(), Type.Null()]),
  maximum_business_days: Type.Union([Type.Integer(), Type.Null()]),
  delivery_on: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
});
export type ShippingOption = Static<typeof OptionSchema>;

export const ShippingInfo = Type.Object({
  settings_url: Type.String(),
  enabled: Type.Boolean(),
  destinations: Type.Array(DestinationSchema),
});

export const QuoteBody = Type.Object({
  country: Type.String({ minLength: 1, maxLength: 64 }),
  currency: Currency,
  subtotal_in_cents: Cents,
  region: Type.Optional(Type.Union([Type.String({ maxLength: 128 }), Type.Null()])),
});
export type QuoteInput = Static<typeof QuoteBody>;

export const QuoteResponse = Type.Object({ options: Type.Array(OptionSchema) });

/** A regional price: the first entry naming the buyer's region wins over the option's amount. */
const RegionAmount = Type.Object({
  regions: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { minItems: 1, maxItems: 100 }),
  amount_in_cents: Cents,
});

/** A catalogue option as the merchant configures it. */
export const CatalogueOption = Type.Object({
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  name: Type.String({ minLength: 1, maxLength: 200 }),
  kind: Type.Union([Type.Literal('delivery'), Type.Literal('pickup')]),
  currency: Currency,
  amount_in_cents: Cents,
  free_from_amount_in_cents: Type.Optional(Type.Union([Cents, Type.Null()])),
  minimum_business_days: Type.Optional(NullableDays),
  maximum_business_days: Type.Optional(NullableDays),
  /** Regions where the option exists; empty means the whole country. */
  regions: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 100 })),
  region_amounts: Type.Optional(Type.Array(RegionAmount, { maxItems: 100 })),
});
export type CatalogueOptionInput = Static<typeof CatalogueOption>;

export const CatalogueDestination = Type.Object({
  code: Type.String({ minLength: 2, maxLength: 2 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  requires_region: Type.Optional(Type.Boolean()),
  options: Type.Array(CatalogueOption, { maxItems: 50 }),
});
export type CatalogueDestinationInput = Static<typeof CatalogueDestination>;

export const SettingsBody = Type.Object({
  enabled: Type.Optional(Type.Boolean()),
  destinations: Type.Optional(Type.Array(CatalogueDestination, { maxItems: 250 })),
});
export type SettingsInput = Static<typeof SettingsBody>;

/** The stored, normalised catalogue: ids assigned, regions as ISO codes. */
export const StoredOption = Type.Object({
  id: Type.String(),
  name: Type.String(),
  kind: Type.Union([Type.Literal('delivery'), Type.Literal('pickup')]),
  currency: Type.String(),
  amount_in_cents: Type.Integer(),
  free_from_amount_in_cents: Type.Union([Type.Integer(), Type.Null()]),
  minimum_business_days: Type.Union([Type.Integer(), Type.Null()]),
  maximum_business_days: Type.Union([Type.Integer(), Type.Null()]),
  regions: Type.Array(Type.String()),
  region_amounts: Type.Array(Type.Object({ regions: Type.Array(Type.String()), amount_in_cents: Type.Integer() })),
});
export type StoredOptionT = Static<typeof StoredOption>;

export const StoredDestination = Type.Object({
  code: Type.String(),
  name: Type.String(),
  requires_region: Type.Boolean(),
  options: Type.Array(StoredOption),
});
export type StoredDestinationT = Static<typeof StoredDestination>;

export const SettingsSchema = Type.Object({
  enabled: Type.Boolean(),
  destinations: Type.Array(StoredDestination),
  updated_at: Type.Union([Type.String(), Type.Null()]),
});
export type ShippingSettings = Static<typeof SettingsSchema>;
