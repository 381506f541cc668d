import { Type } from '@sinclair/typebox';
import type { AppContext } from '../../context.js';
import { isoTime } from '../../clock.js';
import { CATALOGUE, examplePayload, webhookBody, type CatalogueEntry } from '../../events/catalogue.js';
import { Nullable } from '../../api/schemas.js';

const Example = Nullable(Type.Record(Type.String(), Type.Unknown()));

export const EventTypeSchema = Type.Object({
  name: Type.String(),
  description: Type.String(),
  group: Type.String({ description: 'Its model group (what `GET /activities?type=` also accepts).' }),
  family: Type.Union([Type.Literal('unified'), Type.Literal('legacy'), Type.Literal('unchanged'), Type.Literal('current')]),
  api_version: Type.String(),
  replaced_by: Nullable(Type.String({ description: 'A legacy event: the unified event that replaces it.' })),
  examples: Type.Object(
    { unified: Example, legacy: Example },
    {
      description:
        'The body delivered, by format: `unified` what an account on the unified format receives for this happening (the event itself, or for a legacy event its replacement), `legacy` what an account on both formats also receives (the event itself, or for a unified event the legacy one it replaces); null: no event of that format.',
    },
  ),
});

/** Which legacy event each unified one replaces (the first, in catalogue order). */
function legacyOf(): Map<string, CatalogueEntry> {
  const out = new Map<string, CatalogueEntry>();
  for (const e of CATALOGUE.values()) if (e.replacedBy && !out.has(e.replacedBy)) out.set(e.replacedBy, e);
  return out;
}

/**
 * `GET /event_types`: the catalogue the code emits from (src/events/catalogue.ts), each type with
 * the body a receiver gets, built by the same example builders as the test send.
 */
export function eventTypeCatalogue(ctx: AppContext, accountId: string, liveMode: boolean) {
  const input = { accountId, liveMode, createdAt: isoTime(ctx.clock.now()) };
  const body = (e: CatalogueEntry | undefined) =>
    e ? webhookBody({ type: e.type, payload: examplePayload(e.type, input, ctx)!, account_id: accountId }, { connected: false }) : null;
  const replaced = legacyOf();
  return [...CATALOGUE.values()].map((e) => {
    const legacyFormat = e.family === 'legacy' || e.family === 'unchanged';
    const own = body(e);
    return {
      name: e.type,
      description: e.description,
      group: e.group,
      family: e.family,
      api_version: e.apiVersion,
      replaced_by: e.replacedBy,
      examples: {
        unified: e.family === 'legacy' ? body(CATALOGUE.get(e.replacedBy ?? '')) : e.family === 'unchanged' ? own : legacyFormat ? null : own,
        legacy: legacyFormat ? own : e.family === 'unified' ? body(replaced.get(e.type)) : null,
      },
    };
  });
}
