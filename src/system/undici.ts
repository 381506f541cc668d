import { createRequire } from 'node:module';
import type * as Undici from 'undici';

const requireHere = createRequire(import.meta.url);
let loaded: typeof Undici | undefined;

/**
 * undici, loaded at its first use rather than at start (issue 16): it is the largest package posd
 * imports (about 1 MB of code, a sixth of a start's loading), and nothing a start or a first request
 * does needs it; every caller (webhook deliveries, sync with the central, calendar feeds, tax
 * invoices, contract deliveries, doctor) sends its first request later. Synchronous, so an agent can
 * still be made where it was; each caller makes its agent at its first request.
 */
export function undici(): typeof Undici {
  loaded ??= requireHere('undici') as typeof Undici;
  return loaded;
}
