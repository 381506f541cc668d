/**
 * Event formats (spec 6.3 and 9). Two payload families exist: the unified `intent.*` family and the
 * older per-method family (`payment_intent.*`, `cash_intent.*`, ...). Each carries its own
 * `api_version` date. Which family an account receives is decided once, when the account is made,
 * and kept in `accounts.event_format`: `unified` (only `intent.*` where a replacement exists) or
 * `both` (the unified event and its legacy twin). Emitters of payment events read it.
 */

/** `api_version` of the unified family and of the events that appeared with it. */
export const UNIFIED_API_VERSION = '2025-01-01';
/** `api_version` of the per-method family and of the events the change left as they were. */
export const LEGACY_API_VERSION = '2023-04-01';

/** Default of `events.unified_since`: the day the unified format became the default. */
export const DEFAULT_UNIFIED_SINCE = '2025-01-01T00:00:00.000Z';

export type AccountEventFormat = 'unified' | 'both';

/**
 * The format of a new live account (spec 6.3). A child connected to a platform that still gets both
 * formats gets both too, whatever its own creation date, so the platform's integration keeps seeing
 * the events it already parses. Otherwise the creation instant decides. (Sandboxes are always
 * `unified`: `AccountsService.createAccount` writes that directly.)
 */
export function newAccountEventFormat(input: { createdAt: string; unifiedSince: string; parentFormat: AccountEventFormat | null }): AccountEventFormat {
  if (input.parentFormat === 'both') return 'both';
  const since = Date.parse(input.unifiedSince);
  if (Number.isNaN(since)) throw new Error(`events.unified_since is not a date: ${input.unifiedSince}`);
  return Date.parse(input.createdAt) >= since ? 'unified' : 'both';
}

/** Whether an account also receives the per-method twin of a unified payment event. */
export function receivesLegacyEvents(account: { event_format: AccountEventFormat }): boolean {
  return account.event_format === 'both';
}
