import type { AppContext } from '../../context.js';
import { tx } from '../../db/database.js';
import { isoTime } from '../../clock.js';
import { invalid } from '../../errors.js';
import { newId } from '../../ids.js';
import type { Account } from '../../accounts/service.js';
import { COUNTRY_NAMES } from './subdivisions.js';
import { knowsSubdivisions, resolveRegion } from './regions.js';
import { ShippingStore } from './store.js';
import type { CatalogueDestinationInput, QuoteInput, SettingsInput, ShippingOption, ShippingSettings, StoredDestinationT } from './schema.js';

/**
 * What a new account ships with: Guatemala, regions required (rates differ between the capital's
 * department and the rest), home delivery. Shipping starts off, so every supported country is
 * quoted free until the merchant turns it on. No pickup: spec 4.12 offers none.
 */
function defaultCatalogue(): StoredDestinationT[] {
  return [
    {
      code: 'GT',
      name: COUNTRY_NAMES.GT,
      requires_region: true,
      options: [
        {
          id: 'standard',
          name: 'Envío a domicilio',
          kind: 'delivery',
          currency: 'GTQ',
          amount_in_cents: 4500,
          free_from_amount_in_cents: 50000,
          minimum_business_days: 2,
          maximum_business_days: 4,
          regions: [],
          region_amounts: [{ regions: ['GT-01'], amount_in_cents: 2500 }],
        },
      ],
    },
  ];
}

/** Guatemala has no daylight saving: business days are counted on its UTC-6 calendar. */
const GT_OFFSET_MS = -6 * 3600_000;

/** The calendar date `days` business days (Monday to Friday) after `nowMs`, as YYYY-MM-DD. */
export function addBusinessDays(nowMs: number, days: number): string {
  const d = new Date(nowMs + GT_OFFSET_MS);
  let left = days;
  while (left > 0) {
    d.setUTCDate(d.getUTCDate() + 1);
    const wd = d.getUTCDay();
    if (wd !== 0 && wd !== 6) left--;
  }
  return d.toISOString().slice(0, 10);
}

/** What a supported country outside the catalogue is quoted while shipping is off. */
function freeDelivery(currency: string): ShippingOption {
  return {
    id: 'free',
    name: 'Envío gratis',
    kind: 'delivery',
    amount_in_cents: 0,
    currency,
    free_from_amount_in_cents: 0,
    minimum_business_days: null,
    maximum_business_days: null,
    delivery_on: null,
  };
}

/**
 * The destinations a buyer may choose: the catalogue's, and while shipping is off every other
 * supported country as well (spec 4.12), with no region to give since nothing is charged.
 */
export function offeredDestinations(settings: ShippingSettings): Array<{ code: string; name: string; requires_region: boolean }> {
  const listed = settings.destinations.map((d) => ({ code: d.code, name: d.name, requires_region: d.requires_region }));
  if (settings.enabled) return listed;
  const codes = new Set(listed.map((d) => d.code));
  return [
    ...listed,
    ...Object.entries(COUNTRY_NAMES)
      .filter(([c]) => !codes.has(c))
      .map(([code, name]) => ({ code, name, requires_region: false })),
  ];
}

export class ShippingService {
  private readonly store: ShippingStore;

  constructor(private readonly ctx: AppContext) {
    this.store = new ShippingStore(ctx.db);
  }

  settings(account: Account): ShippingSettings {
    const row = this.store.settings(account.id);
    if (!row) return { enabled: false, destinations: defaultCatalogue(), updated_at: null };
    return { enabled: row.enabled === 1, destinations: JSON.parse(row.catalogue), updated_at: row.updated_at };
  }

  /** Replaces the parts given (`enabled`, `destinations`); 400 naming every bad region or option. */
  update(account: Account, input: SettingsInput): ShippingSettings {
    return tx(this.ctx.db, () => {
      const current = this.settings(account);
      const destinations = input.destinations ? normaliseCatalogue(input.destinations) : current.destinations;
      const enabled = input.enabled ?? current.enabled;
      this.store.save({
        account_id: account.id,
        live_mode: account.live_mode ? 1 : 0,
        enabled: enabled ? 1 : 0,
        catalogue: JSON.stringify(destinations),
        updated_at: isoTime(this.ctx.clock.now()),
      });
      return this.settings(account);
    });
  }

  /** Spec 4.12: the options for a destination, a currency and a subtotal. */
  quote(account: Account, input: QuoteInput): ShippingOption[] {
    const country = input.country.trim().toUpperCase();
    if (!/^[A-Z]{2}$/.test(country)) throw invalid({ country: 'must be an ISO 3166-1 alpha-2 country code' });
    const settings = this.settings(account);
    const destination = settings.destinations.find((d) => d.code === country);
    const regionText = input.region?.trim() ? input.region.trim() : undefined;
    let region: string | undefined;
    if (regionText !== undefined && knowsSubdivisions(country)) {
      region = resolveRegion(country, regionText);
      if (!region) throw invalid({ region: `is not a recognized state, province or department of ${country}` });
    }
    // Spec 4.12: shipping off, every supported country ships free, listed or not.
    if (!settings.enabled && COUNTRY_NAMES[country] && !destination?.options.some((o) => o.kind === 'delivery' && o.currency === input.currency)) {
      return [freeDelivery(input.currency)];
    }
    if (!destination) return [];
    if (destination.requires_region && !regionText) {
      throw invalid({ region: `is required to quote shipping to ${country}` });
    }
    const now = this.ctx.clock.now();
    return (
      destination.options
        // Spec 4.12: pickup options are never offered, whatever the catalogue holds.
        .filter((o) => o.kind === 'delivery')
        .filter((o) => o.currency === input.currency)
        .filter((o) => o.regions.length === 0 || (region !== undefined && o.regions.includes(region)))
        .map((o) => {
          const regional = region ? o.region_amounts.find((r) => r.regions.includes(region!)) : undefined;
          let amount = regional ? regional.amount_in_cents : o.amount_in_cents;
          if (o.free_from_amount_in_cents !== null && input.subtotal_in_cents >= o.free_from_amount_in_cents) amount = 0;
          // Shipping off: the store still lists how it delivers, but charges nothing for it.
          if (!settings.enabled) amount = 0;
          return {
            id: o.id,
            name: o.name,
            kind: o.kind,
            amount_in_cents: amount,
            currency: o.currency,
            free_from_amount_in_cents: settings.enabled ? o.free_from_amount_in_cents : 0,
            minimum_business_days: o.minimum_business_days,
            maximum_business_days: o.maximum_business_days,
            delivery_on: o.maximum_business_days === null ? null : addBusinessDays(now, o.maximum_business_days),
          };
        })
    );
  }
}

/** Validates a submitted catalogue and stores regions as ISO codes, so quotes compare codes only. */
function normaliseCatalogue(input: CatalogueDestinationInput[]): StoredDestinationT[] {
  const errors: Record<string, string[]> = {};
  const add = (field: string, msg: string) => (errors[field] ??= []).push(msg);
  const seen = new Set<string>();
  const out = input.map((d, i) => {
    const code = d.code.toUpperCase();
    if (!/^[A-Z]{2}$/.test(code)) add(`destinations.${i}.code`, 'must be an ISO 3166-1 alpha-2 country code');
    if (seen.has(code)) add(`destinations.${i}.code`, 'is listed twice');
    seen.add(code);
    const requiresRegion = d.requires_region ?? false;
    if (requiresRegion && !knowsSubdivisions(code)) {
      add(`destinations.${i}.requires_region`, `posd does not know the subdivisions of ${code}`);
    }
    const toIso = (field: string, list: string[]) =>
      list.map((text, k) => {
        const iso = knowsSubdivisions(code) ? resolveRegion(code, text) : undefined;
        if (!iso) add(`${field}.${k}`, `is not a known region of ${code}`);
        return iso ?? text;
      });
    const optionIds = new Set<string>();
    const options = d.options.map((o, j) => {
      const base = `destinations.${i}.options.${j}`;
      const id = o.id ?? newId('shipopt');
      if (optionIds.has(id)) add(`${base}.id`, 'is used twice in this destination');
      optionIds.add(id);
      const min = o.minimum_business_days ?? null;
      const max = o.maximum_business_days ?? null;
      if (min !== null && max !== null && min > max) add(`${base}.minimum_business_days`, 'must not exceed maximum_business_days');
      return {
        id,
        name: o.name,
        kind: o.kind,
        currency: o.currency,
        amount_in_cents: o.amount_in_cents,
        free_from_amount_in_cents: o.free_from_amount_in_cents ?? null,
        minimum_business_days: min,
        maximum_business_days: max,
        regions: toIso(`${base}.regions`, o.regions ?? []),
        region_amounts: (o.region_amounts ?? []).map((r, k) => ({
          regions: toIso(`${base}.region_amounts.${k}.regions`, r.regions),
          amount_in_cents: r.amount_in_cents,
        })),
      };
    });
    return { code, name: d.name ?? COUNTRY_NAMES[code] ?? code, requires_region: requiresRegion, options };
  });
  if (Object.keys(errors).length > 0) throw invalid(errors);
  return out;
}
