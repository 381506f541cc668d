import { describe, expect, it } from 'vitest';
import { resolveRegion } from '../../src/modules/shipping/regions.js';
import { SUBDIVISIONS } from '../../src/modules/shipping/subdivisions.js';

describe('region matching on real subdivision names (spec 4.12)', () => {
  it("knows Guatemala's 22 departments with their ISO 3166-2 codes", () => {
    expect(SUBDIVISIONS.GT).toHaveLength(22);
    const codes = SUBDIVISIONS.GT.map((e) => `GT-${e[0]}`);
    expect(codes).toEqual(Array.from({ length: 22 }, (_, i) => `GT-${String(i + 1).padStart(2, '0')}`));
    expect(SUBDIVISIONS.MX).toHaveLength(32);
    expect(SUBDIVISIONS.SV).toHaveLength(14);
    expect(SUBDIVISIONS.US).toHaveLength(51);
  });

  it.each([
    ['Sacatepéquez', 'GT-03'],
    ['sacatepequez', 'GT-03'],
    ['  SACATEPÉQUEZ ', 'GT-03'],
    ['GT-03', 'GT-03'],
    ['gt 03', 'GT-03'],
    ['GT03', 'GT-03'],
    ['03', 'GT-03'],
    ['3', 'GT-03'],
    ['GT-3', 'GT-03'],
    ['GT-SA', 'GT-03'],
    ['Quiché', 'GT-14'],
    ['El Quiché', 'GT-14'],
    ['el-quiche', 'GT-14'],
    ['GT-Quiché', 'GT-14'],
    ['Totonicapán', 'GT-08'],
    ['totonicapan.', 'GT-08'],
    ['Petén', 'GT-17'],
    ['Guatemala', 'GT-01'],
    ['gt_guatemala', 'GT-01'],
    ['Alta Verapaz', 'GT-16'],
    ['altaverapaz', 'GT-16'],
  ])('GT %j is %s', (input, iso) => {
    expect(resolveRegion('GT', input)).toBe(iso);
  });

  it.each([
    ['MX', 'Nuevo León', 'MX-NLE'],
    ['MX', 'nuevo leon', 'MX-NLE'],
    ['MX', 'MX-NLE', 'MX-NLE'],
    ['MX', 'Michoacán de Ocampo', 'MX-MIC'],
    ['MX', 'CDMX', 'MX-CMX'],
    ['MX', 'Estado de México', 'MX-MEX'],
    ['MX', 'Yucatan', 'MX-YUC'],
    ['SV', 'Usulután', 'SV-US'],
    ['SV', 'SV-US', 'SV-US'],
    ['SV', 'San Vicente', 'SV-SV'],
    ['SV', 'sv', 'SV-SV'],
    ['SV', 'Cabanas', 'SV-CA'],
    ['US', 'California', 'US-CA'],
    ['US', 'us-ca', 'US-CA'],
    ['US', 'new york', 'US-NY'],
    ['US', 'N.Y.', 'US-NY'],
    ['HN', 'Francisco Morazán', 'HN-FM'],
  ])('%s %j is %s', (country, input, iso) => {
    expect(resolveRegion(country, input)).toBe(iso);
  });

  it.each([
    ['GT', 'Narnia'],
    ['GT', 'GT-23'],
    ['GT', '0'],
    ['GT', ''],
    ['GT', '---'],
    ['GT', 'MX-NLE'],
    ['MX', 'Sacatepéquez'],
    ['US', 'Ontario'],
    ['CR', 'San José'],
  ])('%s %j is not a region', (country, input) => {
    expect(resolveRegion(country, input)).toBeUndefined();
  });
});
