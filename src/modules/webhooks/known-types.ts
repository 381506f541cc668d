import { invalid } from '../../errors.js';
import { catalogueEntry } from '../../events/catalogue.js';

/**
 * Event types named by a request (endpoint filters, replays): each must be in the catalogue the
 * code emits from (src/events/catalogue.ts, docs/events.md), so a typo is a 400 naming it rather
 * than a filter or replay that silently matches nothing. Null or absent: all types.
 */
export function checkedTypes(field: string, types: string[] | null | undefined): string[] | null {
  if (types === undefined || types === null) return null;
  const unknown = types.filter((t) => !catalogueEntry(t));
  if (unknown.length > 0) throw invalid({ [field]: `not in the event catalogue (docs/events.md): ${unknown.join(', ')}` });
  return [...new Set(types)];
}
