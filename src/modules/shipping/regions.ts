import { SUBDIVISIONS } from './subdivisions.js';

/**
 * Buyers type regions every way: "Sacatepéquez", "sacatepequez", "GT-03", "gt 3", "GT_SA",
 * "Quiché" or "El Quiché". We compare a folded form: accents stripped (NFD, marks removed), lower
 * case, every character that is not a letter or digit dropped, and numeric codes without leading
 * zeros.
 */
export function fold(text: string): string {
  const f = text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
  return /^\d+$/.test(f) ? String(Number(f)) : f;
}

const INDEX = new Map<string, Map<string, string>>();

function indexFor(country: string): Map<string, string> | undefined {
  const cached = INDEX.get(country);
  if (cached) return cached;
  const entries = SUBDIVISIONS[country];
  if (!entries) return undefined;
  const index = new Map<string, string>();
  for (const [code, ...names] of entries) {
    const iso = `${country}-${code}`;
    for (const text of [code, ...names]) {
      const key = fold(text);
      const other = index.get(key);
      // Two subdivisions answering to one spelling would make a quote depend on table order.
      if (other && other !== iso) throw new Error(`subdivision spelling ${text} is ambiguous in ${country}`);
      index.set(key, iso);
    }
  }
  INDEX.set(country, index);
  return index;
}

/** Whether we hold the subdivisions of this country (so a region can be required and checked). */
export function knowsSubdivisions(country: string): boolean {
  return SUBDIVISIONS[country.toUpperCase()] !== undefined;
}

/**
 * The ISO 3166-2 code (`GT-03`) of what the buyer typed for `country` (alpha-2), or undefined.
 * Accepts the code with or without the country prefix, the official name, or a known alias.
 */
export function resolveRegion(country: string, input: string): string | undefined {
  const cc = country.toUpperCase();
  const index = indexFor(cc);
  if (!index) return undefined;
  const key = fold(input);
  if (!key) return undefined;
  const direct = index.get(key);
  if (direct) return direct;
  const prefix = cc.toLowerCase();
  if (key.startsWith(prefix) && key.length > prefix.length) {
    const rest = key.slice(prefix.length);
    return index.get(/^\d+$/.test(rest) ? String(Number(rest)) : rest);
  }
  return undefined;
}

/** The official name of an ISO code this module knows. */
export function regionName(iso: string): string | undefined {
  const [cc, code] = iso.split('-');
  return SUBDIVISIONS[cc]?.find((e) => e[0] === code)?.[1];
}
