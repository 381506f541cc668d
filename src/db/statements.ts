/**
 * A store's statements, each prepared by its first use instead of when the store is made: stores
 * are made as the daemon registers its routes and starts its workers, and preparing every statement
 * of every store then was a few percent of a start (issue 16, docs/startup.md), for statements most
 * starts never run. `makers` maps each name to the `db.prepare(…)` that makes it; the object
 * returned has the same names, each read preparing its statement once. SQL a table does not fit is
 * then an error at the first use, which the store's own tests reach.
 */
// `() => object`, not `() => Statement`: a contextual Statement type would make TypeScript infer
// each db.prepare's bind parameters from it instead of its defaults.
export function preparedOnUse<M extends Record<string, () => object>>(makers: M): { readonly [K in keyof M]: ReturnType<M[K]> } {
  const out = {} as { [K in keyof M]: ReturnType<M[K]> };
  for (const name of Object.keys(makers) as (keyof M)[]) {
    Object.defineProperty(out, name, {
      enumerable: true,
      get() {
        const stmt = makers[name]() as ReturnType<M[typeof name]>;
        Object.defineProperty(out, name, { value: stmt, enumerable: true });
        return stmt;
      },
      configurable: true,
    });
  }
  return out;
}
