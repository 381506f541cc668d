import type { OutageNow } from './outage.js';
import { age, localText, money } from './time.js';

const LINKS: Record<string, string> = { central: 'the central (internet)', processor: 'the card processor' };

/**
 * The amber level of the verdict, "Working offline": a link is down but the store goes on. Each line
 * says what waits and until when, in plain words; it turns red (a problem line from the sync checks)
 * only when it lasts past sync.alert_link_down_ms or a stored payment's deadline nears. Empty when
 * every link is up. Markup's side (loaded with the page, src/modules/ops/page.ts).
 */
export function offlineLines(now: OutageNow, nowMs: number): string[] {
  if (!now.offline) return [];
  const links = now.links.map((l) => LINKS[l.link] ?? l.link).join(' and ');
  const out = [
    `no contact with ${links} since ${localText(now.since!, nowMs)} (${age(now.down_for_ms)}): cash, the tills and the terminals go on; cards are stored within the offline caps`,
  ];
  if (now.records_waiting > 0) out.push(`${now.records_waiting} record(s) wait to be sent to the central; they go by themselves once it answers`);
  const stored = now.stored.reduce((n, s) => n + s.count, 0);
  if (stored > 0) {
    const amounts = now.stored.map((s) => money(s.amount_in_cents, s.currency)).join(', ');
    const by =
      now.next_deadline && now.deadline_in_ms !== null && now.deadline_in_ms > 0
        ? `; the oldest must reach the processor by ${localText(now.next_deadline, nowMs)} (in ${age(now.deadline_in_ms)}), or it expires and the sale is owed again`
        : '';
    out.push(`${stored} card payment(s) stored offline (${amounts}) wait to be forwarded${by}`);
  }
  return out;
}
