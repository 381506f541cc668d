import type { Dispatcher } from 'undici';
import { undici } from '../../system/undici.js';
import { describeOutboundError, guardedAgent, literalRefused, outboundGuard, ADDRESS_REFUSED } from '../../system/url-guard.js';
import type { AppContext } from '../../context.js';
import type { Account } from '../../accounts/service.js';
import type { Worker } from '../../api/module.js';
import { tx } from '../../db/database.js';
import { ApiError } from '../../errors.js';
import { isoTime } from '../../clock.js';
import { newId } from '../../ids.js';
import { resourceRow } from '../bookables/service.js';
import { feedsStoreOf, type FeedRow } from './store.js';

const MINUTE = 60_000;

/**
 * How the feed worker reaches the internet: through the outbound guard (a feed is a URL fetched on
 * an account's word, so it must not reach the box's own network). A test passes the CA it trusts;
 * the agent is still the guarded one.
 */
const dispatchers = new WeakMap<object, Dispatcher>();
export function setFeedTrust(ctx: AppContext, ca: string | undefined): void {
  dispatchers.set(ctx, guardedAgent(outboundGuard(ctx), { timeoutMs: ctx.config.scheduling.feed_timeout_ms, ca }));
}
function feedAgent(ctx: AppContext): Dispatcher {
  let d = dispatchers.get(ctx);
  if (!d) {
    d = guardedAgent(outboundGuard(ctx), { timeoutMs: ctx.config.scheduling.feed_timeout_ms });
    dispatchers.set(ctx, d);
  }
  return d;
}

/** A failure whose message is posd's own (status, size, content), safe to store as `last_error`. */
class FeedError extends Error {}

export function feedView(f: FeedRow) {
  return {
    id: f.id,
    resource_id: f.resource_id,
    label: f.label,
    url: f.url,
    last_synced_at: f.last_synced_at,
    last_error: f.last_error,
    created_at: f.created_at,
  };
}

/**
 * Spec 4.7: `url` must be https; anything else is 422, and so is a URL the outbound guard refuses
 * (a private, local or metadata address, now or after DNS). The first read is due at once.
 */
export async function createFeed(ctx: AppContext, account: Account, resourceId: string, b: { label: string; url: string }): Promise<FeedRow> {
  const resource = resourceRow(ctx, account, resourceId);
  let url: URL;
  try {
    url = new URL(b.url);
  } catch {
    throw new ApiError('invalid_feed_url', { message: 'The url is not a valid URL.', errors: { url: ['must be an https URL'] } });
  }
  if (url.protocol !== 'https:') throw new ApiError('invalid_feed_url', { errors: { url: ['must be an https URL'] } });
  // The reasons name no resolved address: the answer must not tell what a name means inside.
  if ((await outboundGuard(ctx).check(url.toString())).length > 0) {
    throw new ApiError('invalid_feed_url', { errors: { url: ['must not point at a private, local or metadata address'] } });
  }
  const now = isoTime(ctx.clock.now());
  const row: FeedRow = {
    id: newId('feed'),
    account_id: account.id,
    live_mode: account.live_mode ? 1 : 0,
    resource_id: resource.id,
    label: b.label,
    url: url.toString(),
    last_synced_at: null,
    last_error: null,
    next_sync_at: now,
    created_at: now,
  };
  tx(ctx.db, () => feedsStoreOf(ctx.db).insert(row));
  return row;
}

export function feedsOfResource(ctx: AppContext, account: Account, resourceId: string): FeedRow[] {
  resourceRow(ctx, account, resourceId);
  return feedsStoreOf(ctx.db).ofResource(resourceId);
}

export function feedBlocks(ctx: AppContext, feedId: string) {
  return feedsStoreOf(ctx.db).blocksOf(feedId);
}

async function download(ctx: AppContext, url: string): Promise<string> {
  const { feed_timeout_ms: timeout, feed_max_bytes: max } = ctx.config.scheduling;
  // A literal address never reaches the guarded lookup; checked here on every read.
  if (literalRefused(outboundGuard(ctx), url)) throw new FeedError(ADDRESS_REFUSED);
  const res = await undici().request(url, {
    method: 'GET',
    dispatcher: feedAgent(ctx),
    headers: { accept: 'text/calendar, */*;q=0.5', 'user-agent': 'posd-calendar-feed/1' },
    headersTimeout: timeout,
    bodyTimeout: timeout,
    signal: AbortSignal.any([ctx.shutdown, AbortSignal.timeout(timeout)]),
  });
  if (res.statusCode !== 200) {
    await res.body.dump();
    // Redirects are not followed (a public URL could send the read inward), nor echoed.
    const where = res.statusCode >= 300 && res.statusCode < 400 ? ': redirects are not followed, register the final URL' : '';
    throw new FeedError(`HTTP ${res.statusCode}${where}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).length;
    if (size > max) {
      res.body.destroy();
      throw new FeedError(`feed larger than ${max} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads one feed and replaces its blocks in one transaction. A failure (network, HTTP status, a
 * file that is not iCalendar) keeps the last good blocks and records `last_error`. Either way the
 * next read is due a refresh interval later (spec 8: every 15 minutes).
 */
export async function syncFeed(ctx: AppContext, feed: FeedRow): Promise<FeedRow> {
  const store = feedsStoreOf(ctx.db);
  const next = () => isoTime(ctx.clock.now() + ctx.config.scheduling.feed_interval_minutes * MINUTE);
  try {
    let text: string;
    try {
      text = await download(ctx, feed.url);
    } catch (err) {
      throw err instanceof FeedError ? err : new FeedError(describeOutboundError(err));
    }
    const today = isoTime(ctx.clock.now()).slice(0, 10);
    const until = isoTime(ctx.clock.now() + ctx.config.scheduling.feed_horizon_days * 86_400_000).slice(0, 10);
    // Yesterday too: a night that began before midnight UTC somewhere west is still tonight there.
    const from = isoTime(Date.parse(`${today}T00:00:00Z`) - 86_400_000).slice(0, 10);
    // The iCalendar parser is loaded by the first feed read, not at start.
    const { blockedNights } = await import('./ical.js');
    const blocks = blockedNights(text, from, until);
    tx(ctx.db, () => {
      store.replaceBlocks(feed, blocks);
      store.succeeded(feed.id, isoTime(ctx.clock.now()), next());
    });
  } catch (err) {
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 500) || 'unknown error';
    ctx.log.warn({ feed_id: feed.id, err: message }, 'calendar feed read failed; keeping its last good blocks');
    tx(ctx.db, () => store.failed(feed.id, message, next()));
  }
  return store.get(feed.id)!;
}

/** Reads every feed that is due (by `ctx.clock`), a few at a time. */
export async function syncDueFeeds(ctx: AppContext, limit = 50): Promise<number> {
  const due = feedsStoreOf(ctx.db).due(isoTime(ctx.clock.now()), limit);
  const queue = [...due];
  const run = async () => {
    for (let f = queue.shift(); f; f = queue.shift()) await syncFeed(ctx, f);
  };
  await Promise.all([run(), run(), run(), run()]);
  return due.length;
}

/** Checks for due feeds every `scheduling.sweep_interval_ms`; one pass at a time. */
export function feedsWorker(ctx: AppContext): Worker {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;
  const tick = () => {
    if (running) return;
    running = syncDueFeeds(ctx)
      .catch((err) => ctx.log.error({ err }, 'calendar feed pass failed'))
      .finally(() => (running = undefined));
  };
  return {
    name: 'calendar-feeds',
    start() {
      timer = setInterval(tick, ctx.config.scheduling.sweep_interval_ms);
      timer.unref();
      tick();
    },
    async stop() {
      if (timer) clearInterval(timer);
      await running;
      const agent = dispatchers.get(ctx);
      dispatchers.delete(ctx);
      await agent?.close();
    },
  };
}

/** The public iCalendar export of a unit; the iCalendar library is loaded by the first export. */
export async function unitCalendar(opts: Parameters<typeof import('./ical.js').unitCalendar>[0]): Promise<string> {
  return (await import('./ical.js')).unitCalendar(opts);
}

/** Whether a calendar feed blocks any night of [fromOn, toOn) on the unit (a stay there is refused). */
export function feedsBlockNights(ctx: AppContext, resourceId: string, fromOn: string, toOn: string): boolean {
  return feedsStoreOf(ctx.db).overlaps(resourceId, fromOn, toOn);
}
