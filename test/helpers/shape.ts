/**
 * Where two JSON values differ in shape: keys missing on either side (recursively) and values of
 * another kind (string, number, boolean, object, array). A null on either side matches anything,
 * since a nullable field is null in one emission and set in another; arrays compare their first
 * elements when both have one. An empty result: the same shape.
 */
export function shapeDiff(a: unknown, b: unknown, path = '$'): string[] {
  if (a === null || b === null) return [];
  const kind = (v: unknown) => (Array.isArray(v) ? 'array' : typeof v);
  if (kind(a) !== kind(b)) return [`${path}: ${kind(a)} vs ${kind(b)}`];
  if (Array.isArray(a) && Array.isArray(b)) return a.length && b.length ? shapeDiff(a[0], b[0], `${path}[0]`) : [];
  if (kind(a) !== 'object') return [];
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  return [
    ...ka.filter((k) => !kb.includes(k)).map((k) => `${path}.${k}: only in the first`),
    ...kb.filter((k) => !ka.includes(k)).map((k) => `${path}.${k}: only in the second`),
    ...ka.filter((k) => kb.includes(k)).flatMap((k) => shapeDiff((a as any)[k], (b as any)[k], `${path}.${k}`)),
  ];
}
