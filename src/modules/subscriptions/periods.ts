/** Adds `count` billing intervals to an instant; months and years clamp to the month's last day (Jan 31 + 1 month = Feb 28). */
export function addInterval(iso: string, interval: 'day' | 'week' | 'month' | 'year', count: number): string {
  const d = new Date(iso);
  if (interval === 'day') return new Date(d.getTime() + count * 86_400_000).toISOString();
  if (interval === 'week') return new Date(d.getTime() + count * 7 * 86_400_000).toISOString();
  const months = interval === 'month' ? count : count * 12;
  const day = d.getUTCDate();
  const target = new Date(d.getTime());
  target.setUTCDate(1);
  target.setUTCMonth(target.getUTCMonth() + months);
  const last = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(day, last));
  return target.toISOString();
}
