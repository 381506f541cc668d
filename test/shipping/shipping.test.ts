import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../helpers/manual-clock.js';

let s: TestServer;
// A Friday, 10:00 in Guatemala: two business days later is Tuesday.
const clock = new ManualClock(Date.parse('2026-03-06T16:00:00.000Z'));

const catalogue = {
  enabled: true,
  destinations: [
    {
      code: 'GT',
      requires_region: true,
      options: [
        {
          id: 'express',
          name: 'Express',
          kind: 'delivery',
          currency: 'GTQ',
          amount_in_cents: 5000,
          free_from_amount_in_cents: 40000,
          minimum_business_days: 1,
          maximum_business_days: 2,
          region_amounts: [{ regions: ['Guatemala', 'GT-03'], amount_in_cents: 2000 }],
        },
        {
          id: 'antigua-pickup',
          name: 'Recoger en Antigua',
          kind: 'pickup',
          currency: 'GTQ',
          amount_in_cents: 0,
          regions: ['sacatepequez'],
        },
        { id: 'usd', name: 'Courier', kind: 'delivery', currency: 'USD', amount_in_cents: 1500 },
      ],
    },
    {
      code: 'SV',
      requires_region: false,
      options: [{ id: 'sv', name: 'Internacional', kind: 'delivery', currency: 'GTQ', amount_in_cents: 15000, maximum_business_days: 7 }],
    },
  ],
};

beforeAll(async () => {
  s = await startTestServer({ clock });
});
afterAll(() => s.stop());

const quote = (body: unknown) => s.api('POST', '/store_shipping', { body });

describe('store shipping (spec 2.9, 4.12)', () => {
  it('a new account has shipping off: every option is quoted free', async () => {
    const info = await s.api('GET', '/store_shipping');
    expect(info.status).toBe(200);
    expect(info.body.enabled).toBe(false);
    expect(info.body.settings_url).toBe(`${s.url}/api/store_shipping/settings`);
    // Shipping off: every supported country is offered (spec 4.12), the catalogue's first.
    expect(info.body.destinations.map((d: any) => d.code)).toEqual(['GT', 'SV', 'HN', 'MX', 'US']);
    expect(info.body.destinations[0]).toEqual({ code: 'GT', name: 'Guatemala', requires_region: true });
    const r = await quote({ country: 'GT', region: 'Escuintla', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(r.status).toBe(200);
    expect(r.body.options.length).toBeGreaterThan(0);
    for (const o of r.body.options) expect(o.amount_in_cents).toBe(0);
  });

  it('never quotes a pickup option, and with shipping off every supported country ships free (issue 15)', async () => {
    const gt = await quote({ country: 'GT', region: 'GT-01', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(gt.body.options.map((o: any) => o.kind)).not.toContain('pickup');
    for (const country of ['SV', 'HN', 'MX', 'US']) {
      const r = await quote({ country, currency: 'USD', subtotal_in_cents: 100 });
      expect(r.status, country).toBe(200);
      expect(r.body.options, country).toEqual([
        {
          id: 'free',
          name: 'Envío gratis',
          kind: 'delivery',
          amount_in_cents: 0,
          currency: 'USD',
          free_from_amount_in_cents: 0,
          minimum_business_days: null,
          maximum_business_days: null,
          delivery_on: null,
        },
      ]);
    }
    expect((await quote({ country: 'CR', currency: 'USD', subtotal_in_cents: 100 })).body.options).toEqual([]);
  });

  it('saves a catalogue and lists its destinations', async () => {
    const put = await s.api('PUT', '/store_shipping/settings', { body: catalogue });
    expect(put.status).toBe(200);
    expect(put.body.destinations[0].options[0].region_amounts[0].regions).toEqual(['GT-01', 'GT-03']);
    expect(put.body.destinations[0].options[1].regions).toEqual(['GT-03']);
    const info = await s.api('GET', '/store_shipping');
    expect(info.body.enabled).toBe(true);
    expect(info.body.destinations).toEqual([
      { code: 'GT', name: 'Guatemala', requires_region: true },
      { code: 'SV', name: 'El Salvador', requires_region: false },
    ]);
  });

  it('quotes the regional rate, with every spelling of the region', async () => {
    for (const region of ['Sacatepéquez', 'sacatepequez', 'GT-03', 'gt03', '03', ' SACATEPEQUEZ. ']) {
      const r = await quote({ country: 'GT', region, currency: 'GTQ', subtotal_in_cents: 10000 });
      expect(r.status, region).toBe(200);
      expect(r.body.options).toEqual([
        {
          id: 'express',
          name: 'Express',
          kind: 'delivery',
          amount_in_cents: 2000,
          currency: 'GTQ',
          free_from_amount_in_cents: 40000,
          minimum_business_days: 1,
          maximum_business_days: 2,
          delivery_on: '2026-03-10',
        },
      ]);
    }
  });

  it('outside the listed regions the base rate applies and region-only options disappear', async () => {
    const r = await quote({ country: 'gt', region: 'Quiché', currency: 'GTQ', subtotal_in_cents: 10000 });
    expect(r.status).toBe(200);
    expect(r.body.options.map((o: any) => [o.id, o.amount_in_cents])).toEqual([['express', 5000]]);
  });

  it('the free threshold makes the option free from that subtotal on', async () => {
    const below = await quote({ country: 'GT', region: 'Petén', currency: 'GTQ', subtotal_in_cents: 39999 });
    expect(below.body.options[0].amount_in_cents).toBe(5000);
    const at = await quote({ country: 'GT', region: 'Petén', currency: 'GTQ', subtotal_in_cents: 40000 });
    expect(at.body.options[0].amount_in_cents).toBe(0);
  });

  it('only options priced in the requested currency are quoted', async () => {
    const r = await quote({ country: 'GT', region: 'Zacapa', currency: 'USD', subtotal_in_cents: 100 });
    expect(r.body.options.map((o: any) => [o.id, o.currency, o.amount_in_cents])).toEqual([['usd', 'USD', 1500]]);
  });

  it('region is required where the destination requires it', async () => {
    const r = await quote({ country: 'GT', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('validation_error');
    expect(Object.keys(r.body.errors)).toEqual(['region']);
    const blank = await quote({ country: 'GT', region: '  ', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(blank.status).toBe(400);
  });

  it('an unknown region is refused, a destination without required region quotes without one', async () => {
    const bad = await quote({ country: 'GT', region: 'Nuevo León', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.region).toHaveLength(1);
    const sv = await quote({ country: 'SV', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(sv.status).toBe(200);
    expect(sv.body.options[0]).toMatchObject({ id: 'sv', amount_in_cents: 15000, delivery_on: '2026-03-17' });
    const svRegion = await quote({ country: 'SV', region: 'SV-Usulután', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(svRegion.status).toBe(200);
  });

  it('a country outside the catalogue has no options', async () => {
    const r = await quote({ country: 'CR', currency: 'GTQ', subtotal_in_cents: 100 });
    expect(r.status).toBe(200);
    expect(r.body.options).toEqual([]);
  });

  it.each([
    [{ country: 'GT', region: 'GT-01', currency: 'EUR', subtotal_in_cents: 100 }, 'currency'],
    [{ country: 'GT', region: 'GT-01', currency: 'gtq', subtotal_in_cents: 100 }, 'currency'],
    [{ country: 'GT', region: 'GT-01', subtotal_in_cents: 100 }, 'currency'],
    [{ country: 'GT', region: 'GT-01', currency: 'GTQ', subtotal_in_cents: -1 }, 'subtotal_in_cents'],
    [{ country: 'GT', region: 'GT-01', currency: 'GTQ', subtotal_in_cents: 10.5 }, 'subtotal_in_cents'],
    [{ country: 'GT', region: 'GT-01', currency: 'GTQ', subtotal_in_cents: '1e2' }, 'subtotal_in_cents'],
    [{ country: 'GT', region: 'GT-01', currency: 'GTQ' }, 'subtotal_in_cents'],
    [{ country: 'Guatemala', region: 'GT-01', currency: 'GTQ', subtotal_in_cents: 1 }, 'country'],
  ])('400 for %j', async (body, field) => {
    const r = await quote(body);
    expect(r.status).toBe(400);
    expect(r.body.errors[field]).toBeDefined();
    expect(typeof r.body.message).toBe('string');
  });

  it('a bad catalogue is refused whole and changes nothing', async () => {
    const before = await s.api('GET', '/store_shipping/settings');
    const r = await s.api('PUT', '/store_shipping/settings', {
      body: {
        enabled: false,
        destinations: [
          { code: 'GT', requires_region: true, options: [{ name: 'x', kind: 'delivery', currency: 'GTQ', amount_in_cents: 1, regions: ['Atlantis'] }] },
          { code: 'CR', requires_region: true, options: [] },
        ],
      },
    });
    expect(r.status).toBe(400);
    expect(Object.keys(r.body.errors).sort()).toEqual(['destinations.0.options.0.regions.0', 'destinations.1.requires_region']);
    const after = await s.api('GET', '/store_shipping/settings');
    expect(after.body).toEqual(before.body);
  });

  it('turning shipping off makes everything free, turning it on restores the rates', async () => {
    expect((await s.api('PATCH', '/store_shipping/settings', { body: { enabled: false } })).status).toBe(200);
    const off = await quote({ country: 'GT', region: 'Quiché', currency: 'GTQ', subtotal_in_cents: 1 });
    expect(off.body.options.map((o: any) => [o.id, o.amount_in_cents, o.free_from_amount_in_cents])).toEqual([['express', 0, 0]]);
    await s.api('PATCH', '/store_shipping/settings', { body: { enabled: true } });
    const on = await quote({ country: 'GT', region: 'Quiché', currency: 'GTQ', subtotal_in_cents: 1 });
    expect(on.body.options[0].amount_in_cents).toBe(5000);
  });

  it('each account has its own catalogue (the live account still has the default)', async () => {
    const r = await s.api('GET', '/store_shipping', { key: s.installation.keys.live });
    expect(r.body.enabled).toBe(false);
    expect(r.body.destinations[0]).toEqual({ code: 'GT', name: 'Guatemala', requires_region: true });
  });
});
