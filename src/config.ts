import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isIP } from 'node:net';
import { Type, type Static, type TSchema, Kind } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * The one configuration of posd: a TypeBox schema with typed defaults, read from an optional JSON
 * file and from `POSD_*` environment variables (the variable of `webhooks.allow_cidrs` is
 * `POSD_WEBHOOKS_ALLOW_CIDRS`), validated once at start. Every default lets `posd serve` run with no
 * file at all.
 */
/**
 * An SMTP server's settings (empty host: e-mail off), the shape `src/system/mailer.ts` takes: one
 * definition for every section that sends e-mail.
 */
export function smtpSettings() {
  return Type.Object(
    {
      host: Type.String({ default: '' }),
      port: Type.Integer({ minimum: 1, maximum: 65535, default: 587 }),
      secure: Type.Boolean({ default: false }),
      user: Type.String({ default: '' }),
      password: Type.String({ default: '' }),
      from: Type.String({ default: 'posd <no-reply@localhost>' }),
    },
    { default: {} },
  );
}

export const ConfigSchema = Type.Object({
  /**
   * `store` and `central` keep their data in the data folder (the role is stored there);
   * `central-front` is a stateless process serving `/sync/*` from PostgreSQL (`sync.postgres.url`,
   * docs/central.md): it opens no data folder and the role is never stored.
   */
  role: Type.Union([Type.Literal('store'), Type.Literal('central'), Type.Literal('central-front')], { default: 'store' }),
  data_dir: Type.String({ minLength: 1, default: './data' }),
  http: Type.Object(
    {
      host: Type.String({ minLength: 1, default: '127.0.0.1' }),
      port: Type.Integer({ minimum: 0, maximum: 65535, default: 4242 }),
      /** Absolute base used in Link headers and URLs we hand out; derived from host and port when empty. */
      public_url: Type.String({ default: '' }),
      body_limit_bytes: Type.Integer({ minimum: 1024, maximum: 64 * 1024 * 1024, default: 1024 * 1024 }),
      /** How long SIGTERM waits for requests in flight before closing anyway. */
      shutdown_grace_ms: Type.Integer({ minimum: 0, default: 10_000 }),
      /** The request line and headers must arrive within this (a till on the LAN sends them at once). */
      headers_timeout_ms: Type.Integer({ minimum: 100, maximum: 600_000, default: 10_000 }),
      /** The whole request, body included, must arrive within this; at least headers_timeout_ms. */
      request_timeout_ms: Type.Integer({ minimum: 100, maximum: 600_000, default: 30_000 }),
      /** A keep-alive connection with no request for this long is closed. */
      keep_alive_timeout_ms: Type.Integer({ minimum: 100, maximum: 600_000, default: 30_000 }),
      /** Open connections at once, WebSocket links included; the last quarter is kept for the box's own network. */
      max_connections: Type.Integer({ minimum: 4, maximum: 100_000, default: 512 }),
      /**
       * The box's own network (CIDRs): its tills, kept in when a flood is refused (the connection
       * reserve, the manager login's global limit). Empty: loopback and each interface's subnet.
       */
      own_networks: Type.Array(Type.String(), { default: [] }),
      /** Open connections at once from one address. */
      max_connections_per_address: Type.Integer({ minimum: 1, maximum: 100_000, default: 64 }),
    },
    { default: {} },
  ),
  /**
   * TLS for the API, the page and the terminal links (docs/security.md). `auto`: on whenever
   * `http.host` is not a loopback address (a till program on the box itself may speak plain HTTP);
   * `on`: always; `off`: plain HTTP everywhere, shown in red on the status page.
   */
  tls: Type.Object(
    {
      mode: Type.Union([Type.Literal('auto'), Type.Literal('on'), Type.Literal('off')], { default: 'auto' }),
      /** A manager's own certificate (PEM, chain included) and key; both or neither. Empty: the box CA's certificate. */
      cert_file: Type.String({ default: '' }),
      key_file: Type.String({ default: '' }),
      /** More names and addresses the box's certificate covers, beside its hostname, localhost, http.host and its interfaces. */
      names: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      /** The box's server certificate is valid this long (browsers refuse more than 398 days). */
      cert_validity_days: Type.Integer({ minimum: 2, maximum: 398, default: 397 }),
      /** It is renewed when it has fewer days than this left. */
      renew_before_days: Type.Integer({ minimum: 1, maximum: 365, default: 30 }),
      /** How often posd checks the certificate's expiry and the manager's files for a change. */
      check_interval_ms: Type.Integer({ minimum: 100, default: 3_600_000 }),
      /** `Strict-Transport-Security` max-age sent once TLS is on (0: no header). */
      hsts_max_age_seconds: Type.Integer({ minimum: 0, default: 15_552_000 }),
    },
    { default: {} },
  ),
  database: Type.Object(
    {
      /** FULL by default: a sale acknowledged with a 2xx must survive a power cut. */
      synchronous: Type.Union([Type.Literal('FULL'), Type.Literal('NORMAL'), Type.Literal('EXTRA')], { default: 'FULL' }),
      busy_timeout_ms: Type.Integer({ minimum: 0, default: 5000 }),
      /**
       * WAL checkpoints run on a thread of their own every this many ms (src/db/checkpointer.ts),
       * off the request path. 0: SQLite's default, inside the commit that fills the WAL.
       */
      checkpoint_interval_ms: Type.Integer({ minimum: 0, default: 100 }),
    },
    { default: {} },
  ),
  log: Type.Object(
    {
      level: Type.Union(
        ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
        { default: 'info' },
      ),
      /** `auto`: pretty when stdout is a terminal, JSON otherwise. */
      format: Type.Union([Type.Literal('auto'), Type.Literal('json'), Type.Literal('pretty')], { default: 'auto' }),
    },
    { default: {} },
  ),
  limits: Type.Object(
    {
      /** Spec section 8: 60 requests per second per secret key. */
      per_key_per_second: Type.Integer({ minimum: 1, default: 60 }),
      users_per_ip_per_window: Type.Integer({ minimum: 1, default: 300 }),
      users_per_test_key_per_window: Type.Integer({ minimum: 1, default: 300 }),
      users_window_seconds: Type.Integer({ minimum: 1, default: 300 }),
    },
    { default: {} },
  ),
  /** Security blocking rules: a request matching any rule answers 503 `Blocked`. */
  blocking: Type.Object(
    {
      ips: Type.Array(Type.String(), { default: [] }),
      key_prefixes: Type.Array(Type.String(), { default: [] }),
      user_agents: Type.Array(Type.String(), { default: [] }),
    },
    { default: {} },
  ),
  idempotency: Type.Object(
    {
      /** Gaps.md: stored responses are kept at least 7 days. */
      retention_hours: Type.Integer({ minimum: 168, default: 24 * 8 }),
    },
    { default: {} },
  ),
  sync: Type.Object(
    {
      /** The central's base URL (`https://central.example`); empty: use what `posd init --central-url` stored, or do not sync. */
      central_url: Type.String({ default: '' }),
      /** The store account's own key made at the central; empty: use what `posd init --central-key` stored. */
      central_key: Type.String({ default: '' }),
      /** The central's CA (or certificate) to pin, a PEM file; empty: what `posd init --central-ca/--central-fingerprint` pinned. */
      central_ca_file: Type.String({ default: '' }),
      /** Records per push; a batch is applied at the central in one transaction. */
      batch_size: Type.Integer({ minimum: 1, maximum: 5000, default: 500 }),
      /** Payload bytes per push, kept under the central's `http.body_limit_bytes` (1 MiB by default). */
      batch_max_bytes: Type.Integer({ minimum: 1024, default: 512 * 1024 }),
      /** Back-off after a failed push or pull: doubles from min to max, with jitter. */
      backoff_min_ms: Type.Integer({ minimum: 1, default: 500 }),
      backoff_max_ms: Type.Integer({ minimum: 1, default: 60_000 }),
      /** How long one feed request waits at the central for a change (long-poll). */
      feed_wait_ms: Type.Integer({ minimum: 0, maximum: 120_000, default: 25_000 }),
      /** Timeout of one request to the central (a long-poll adds feed_wait_ms). */
      request_timeout_ms: Type.Integer({ minimum: 100, default: 30_000 }),
      /** Clock difference with the central past which the status warns. */
      clock_warn_ms: Type.Integer({ minimum: 0, default: 60_000 }),
      /** How often the store compares today's and yesterday's totals with the central (0: only on demand). */
      reconcile_interval_ms: Type.Integer({ minimum: 0, default: 600_000 }),
      /** The oldest record waiting this long while the central answers raises an alert (log event, doctor, page). */
      alert_waiting_ms: Type.Integer({ minimum: 1000, default: 300_000 }),
      /** No contact with the central for this long raises an alert. */
      alert_link_down_ms: Type.Integer({ minimum: 1000, default: 900_000 }),
      /**
       * Central: a store box that has not pushed for this long is silent: it raises the central's
       * verdict, doctor and /metrics. A store pushes only when it has records, so a store closed for
       * the night is silent too: a day by default (docs/decisions/0225-central-store-view.md).
       */
      store_silent_ms: Type.Integer({ minimum: 1000, default: 86_400_000 }),
      /**
       * Central: receive pushes but do not apply them (the projector does not run). For maintenance
       * and for the crash tests that stop a central between receipt and projection.
       */
      projector_paused: Type.Boolean({ default: false }),
      /**
       * Central: how far a pushed record's time may be after the push, or before the store's
       * account was made, before the record is refused (`record_in_future`, `record_before_join`):
       * a box's clock may run off by this much (its status warns past `clock_warn_ms`).
       */
      record_time_skew_ms: Type.Integer({ minimum: 0, default: 3_600_000 }),
      /**
       * Central: money a store reports that the central cannot see move is held for an operator's
       * review (`posd sync held`) past these, before it reaches a balance the central pays out:
       * one record's amount, and one store's applied money of one UTC day and currency. 0: off.
       */
      review: Type.Object(
        {
          per_record_cents: Type.Integer({ minimum: 0, default: 20_000_000 }),
          per_day_cents: Type.Integer({ minimum: 0, default: 200_000_000 }),
        },
        { default: {} },
      ),
      /**
       * A chain's central past one machine (docs/central.md): the sync tables on PostgreSQL. Empty
       * url: the central keeps them in its SQLite file. Set on the core (`role: central`) and on
       * every `central-front`.
       */
      postgres: Type.Object(
        {
          /** A libpq connection URI (`postgresql://posd@db.example/posd`, `postgresql:///posd?host=/run/postgresql`). */
          url: Type.String({ default: '' }),
          /** Connections this process keeps open at most. */
          pool_max: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
  terminals: Type.Object(
    {
      /** Serial terminals posd opens at start: each binds a registered terminal id to a port (8N1). */
      serial: Type.Array(
        Type.Object({
          terminal_id: Type.String({ minLength: 1 }),
          path: Type.String({ minLength: 1 }),
          baud_rate: Type.Integer({ minimum: 300, maximum: 4_000_000, default: 115_200 }),
        }),
        { default: [] },
      ),
      /** A taken command that hears nothing for this long asks its terminal for its status (gaps.md: 120 s). */
      dispatch_timeout_ms: Type.Integer({ minimum: 1, default: 120_000 }),
      /** How long a fresh link may stay silent before it must have said hello. */
      hello_timeout_ms: Type.Integer({ minimum: 1, default: 10_000 }),
      /** Protocol keepalive: a ping every 10 s, three missed make the terminal unavailable. 0 disables. */
      ping_interval_ms: Type.Integer({ minimum: 0, default: 10_000 }),
      max_missed_pings: Type.Integer({ minimum: 1, default: 3 }),
      /**
       * Each terminal link's frame budget (docs/terminal-protocol.md, "Frame budget"): past these
       * per second its frames are dropped unread and the link is slowed (reading paused until the
       * second ends); past them `link_close_after_s` seconds in a row, it is closed (code 4008).
       */
      link_frames_per_second: Type.Integer({ minimum: 1, default: 500 }),
      link_bytes_per_second: Type.Integer({ minimum: 1024, default: 4 * 1024 * 1024 }),
      link_close_after_s: Type.Integer({ minimum: 1, maximum: 3600, default: 5 }),
      /** Serial framing: wait for ACK/NAK this long before resending, at most `serial_max_resends` times. */
      serial_ack_timeout_ms: Type.Integer({ minimum: 1, default: 2_000 }),
      serial_max_resends: Type.Integer({ minimum: 0, default: 3 }),
      /** Reopening a serial port that went away backs off from 500 ms up to this. */
      serial_reopen_max_ms: Type.Integer({ minimum: 1, default: 30_000 }),
      /**
       * nexo terminals (docs/terminals-nexo.md): the PEM file of the CA their certificates chain to
       * (Adyen's terminal CA in production; empty: the system's CAs), posd's SaleID towards them, and
       * how long a PaymentRequest may wait for its answer.
       */
      nexo_ca_file: Type.String({ default: '' }),
      nexo_sale_id: Type.String({ minLength: 1, maxLength: 64, default: 'posd' }),
      nexo_payment_timeout_ms: Type.Integer({ minimum: 1_000, default: 180_000 }),
      /**
       * Stored (store-and-forward) card payments, protocol 2 (docs/stored-payments.md): the box's
       * caps, per account and environment, unless an account has its own. Amounts are cents of the
       * account's default currency.
       */
      offline: Type.Object(
        {
          allowed: Type.Boolean({ default: true }),
          max_payment_in_cents: Type.Integer({ minimum: 0, default: 50_000 }),
          max_total_in_cents: Type.Integer({ minimum: 0, default: 500_000 }),
          max_count: Type.Integer({ minimum: 0, default: 100 }),
          /** How long a stored payment may wait to be forwarded; card networks refuse much older ones. */
          max_age_hours: Type.Integer({ minimum: 1, maximum: 168, default: 48 }),
        },
        { default: {} },
      ),
      /**
       * Every terminal's own caps beside its account's (the tighter of the two applies), unless the
       * terminal has its own (`posd payments offline caps --terminal`); null: the account's alone.
       * The totals and counts are that terminal's stored payments.
       */
      offline_per_terminal: Type.Object(
        {
          allowed: Type.Union([Type.Boolean(), Type.Null()], { default: null }),
          max_payment_in_cents: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { default: null }),
          max_total_in_cents: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { default: null }),
          max_count: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { default: null }),
          max_age_hours: Type.Union([Type.Integer({ minimum: 1, maximum: 168 }), Type.Null()], { default: null }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
  reports: Type.Object(
    {
      /** Where generated reports are kept; empty means `<data_dir>/reports`. */
      dir: Type.String({ default: '' }),
      /** Ledger rows read and written per step: between steps the event loop serves requests. */
      batch_rows: Type.Integer({ minimum: 1, maximum: 100_000, default: 500 }),
    },
    { default: {} },
  ),
  connected: Type.Object(
    {
      /** Spec 2.8 `default_mode` for platforms that never set theirs. */
      commission_invoicing_default_mode: Type.Union([Type.Literal('none'), Type.Literal('daily')], { default: 'none' }),
      /** How often the daily commission invoicer looks for finished days and retries. */
      invoice_check_interval_ms: Type.Integer({ minimum: 10, default: 60_000 }),
      /** Attempts before a commission invoice is `failed` for good (`partner_commission_invoice.failed`). */
      invoice_max_attempts: Type.Integer({ minimum: 1, maximum: 100, default: 5 }),
      /** First retry delay; each later retry waits twice as long. */
      invoice_retry_base_ms: Type.Integer({ minimum: 1, default: 60_000 }),
    },
    { default: {} },
  ),
  subscriptions: Type.Object(
    {
      /** Spec 3.5: a canceled subscription may be reactivated within this many days of its cancellation. */
      reactivation_days: Type.Integer({ minimum: 0, maximum: 3650, default: 30 }),
      /** Spec 8: retries 3 and 5 days after the first automatic charge failure. */
      retry_days: Type.Array(Type.Integer({ minimum: 1, maximum: 60 }), { default: [3, 5] }),
      /** How often the biller looks for renewals and retries that are due (on the injected clock). */
      check_interval_ms: Type.Integer({ minimum: 10, default: 60_000 }),
    },
    { default: {} },
  ),
  contracts: Type.Object(
    {
      /** The SMTP server that carries signing links, codes and reminders by e-mail (empty host: e-mail off). */
      smtp: Type.Object(
        {
          host: Type.String({ default: '' }),
          port: Type.Integer({ minimum: 1, maximum: 65535, default: 587 }),
          secure: Type.Boolean({ default: false }),
          user: Type.String({ default: '' }),
          password: Type.String({ default: '' }),
          from: Type.String({ default: 'posd <no-reply@localhost>' }),
        },
        { default: {} },
      ),
      /** A messaging gateway: POST {to, text} as JSON with a bearer key (empty url: messaging off). */
      messaging: Type.Object(
        { url: Type.String({ default: '' }), api_key: Type.String({ default: '' }), timeout_ms: Type.Integer({ minimum: 1, default: 5000 }) },
        { default: {} },
      ),
      /** Spec 8: a reminder this long after sending, if unsigned. */
      reminder_after_hours: Type.Integer({ minimum: 1, default: 48 }),
      /** An unsigned contract expires this long after sending. */
      expire_after_days: Type.Integer({ minimum: 1, default: 30 }),
      code_ttl_minutes: Type.Integer({ minimum: 1, maximum: 60, default: 10 }),
      code_max_attempts: Type.Integer({ minimum: 1, maximum: 20, default: 5 }),
      check_interval_ms: Type.Integer({ minimum: 10, default: 60_000 }),
    },
    { default: {} },
  ),
  accounts: Type.Object(
    {
      default_currency: Type.Union([Type.Literal('GTQ'), Type.Literal('USD')], { default: 'GTQ' }),
      country: Type.String({ default: 'GT' }),
    },
    { default: {} },
  ),
  /** Spec 6.3: which accounts receive which event format (see docs/events.md). */
  events: Type.Object(
    {
      /**
       * The unified change-over: live accounts created at or after this instant get only `intent.*`
       * where a replacement exists (`event_format: unified`); older ones get both formats.
       */
      unified_since: Type.String({
        pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2}))?$',
        default: '2025-01-01T00:00:00.000Z',
      }),
    },
    { default: {} },
  ),
  webhooks: Type.Object(
    {
      /** CIDRs admitted despite being private (a store's LAN systems, tests' local receivers). */
      allow_cidrs: Type.Array(Type.String(), { default: [] }),
      /** Deliveries in flight at once. */
      concurrency: Type.Integer({ minimum: 1, maximum: 1000, default: 16 }),
      /**
       * Commit fan-outs and successful attempts on a worker thread with its own database connection
       * (off the event loop that serves the API and sends the requests). Off by default: measured on
       * a loaded 2-core box it cost more CPU per delivery than it moved off the loop
       * (docs/webhooks.md). An in-memory database always writes on the daemon's connection.
       */
      writer_thread: Type.Boolean({ default: false }),
      /** Per attempt, from connecting to the last byte of the response. */
      timeout_ms: Type.Integer({ minimum: 100, maximum: 120_000, default: 15_000 }),
      /**
       * Delay before each retry after a failed attempt (spec 6.6 and 8: immediately, 1 min, 5 min,
       * 30 min, 2 h, 6 h): one entry per retry, so 1 + length attempts at most.
       */
      retry_delays_ms: Type.Array(Type.Integer({ minimum: 0 }), {
        default: [0, 60_000, 300_000, 1_800_000, 7_200_000, 21_600_000],
        maxItems: 50,
      }),
      /**
       * Longest sleep between looks at the tables. The worker is woken at once by events emitted in
       * this process; the poll finds events other processes wrote (CLI tools, imports).
       */
      poll_ms: Type.Integer({ minimum: 50, maximum: 600_000, default: 30_000 }),
      /** Longest wait a `Retry-After` header may impose on one retry. */
      max_retry_after_ms: Type.Integer({ minimum: 0, default: 21_600_000 }),
      /**
       * Finished deliveries and their attempts are kept this many days after their last change, then
       * deleted (bulk replays reach back this far). Pending ones are kept whatever their age.
       */
      retention_days: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
      /** An endpoint failing this long (every automatic attempt since its last success) is reported once. */
      failing_notice_ms: Type.Integer({ minimum: 60_000, default: 3_600_000 }),
      /** An endpoint failing this many days is disabled (its reason kept); 0: never. */
      auto_disable_after_days: Type.Integer({ minimum: 0, maximum: 365, default: 5 }),
      /**
       * Circuit breaker per endpoint (gates.ts): this many failure signals in a row (automatic
       * attempts failed or timed out, or in flight past slow_ms) stop its sending; 0: off.
       */
      breaker_failures: Type.Integer({ minimum: 0, maximum: 1000, default: 3 }),
      /** An attempt in flight this long counts toward the breaker before its timeout; 0: only outcomes. */
      slow_ms: Type.Integer({ minimum: 0, maximum: 120_000, default: 2_000 }),
      /**
       * Attempts in flight at most for an endpoint that names no max_in_flight (half the default
       * concurrency): a hung receiver holds no more of the slots; 0: no cap.
       */
      endpoint_max_in_flight: Type.Integer({ minimum: 0, maximum: 1000, default: 8 }),
      /** How long an open breaker waits before one probe (doubling after a failed probe, up to 10 min). */
      breaker_probe_ms: Type.Integer({ minimum: 100, default: 30_000 }),
      /**
       * Key (base64 of 32 bytes) that encrypts signing secrets at rest. Empty: a key file
       * `webhook-secrets.key` in the data folder, made on first use.
       */
      // Empty, or base64 of exactly 32 bytes: checked here so a bad key stops the start as a config error.
      secrets_key: Type.String({ default: '', pattern: '^$|^[A-Za-z0-9+/]{43}=$' }),
      /**
       * Operational notices to an account's integrator (docs/webhooks.md, Notices): its notice URL
       * and e-mail address are told when an endpoint starts failing, is disabled, or a message
       * exhausts its attempts.
       */
      notices: Type.Object(
        {
          /** The SMTP server that carries notices by e-mail (empty host: notices go only to notice URLs). */
          smtp: smtpSettings(),
          /** Per notice POST, from connecting to the last byte of the answer. */
          timeout_ms: Type.Integer({ minimum: 100, maximum: 120_000, default: 10_000 }),
          /** Delay before each retry of a notice a channel did not take; then that channel gives up on it. */
          retry_delays_ms: Type.Array(Type.Integer({ minimum: 0 }), { default: [60_000, 300_000, 1_800_000, 7_200_000], maxItems: 20 }),
          /** Longest sleep between looks for notices due (they are also sent as soon as they are recorded). */
          poll_ms: Type.Integer({ minimum: 50, maximum: 600_000, default: 30_000 }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
  scheduling: Type.Object(
    {
      /** How long an unpaid booking holds its slot when its service names no hold_minutes. */
      hold_minutes: Type.Integer({ minimum: 1, maximum: 7 * 24 * 60, default: 30 }),
      /** How often expired holds are released and pending checkouts polled. */
      sweep_interval_ms: Type.Integer({ minimum: 100, default: 30_000 }),
      /** Calendar feeds are read this often (spec 8: every 15 minutes). */
      feed_interval_minutes: Type.Integer({ minimum: 1, default: 15 }),
      /** Per read of one feed; a slow peer must not stall the others. */
      feed_timeout_ms: Type.Integer({ minimum: 100, default: 20_000 }),
      /** The largest feed accepted (bytes). */
      feed_max_bytes: Type.Integer({ minimum: 1024, default: 5 * 1024 * 1024 }),
      /** A customer may cancel from the booking's page up to this many hours before it starts. */
      customer_cancellation_hours: Type.Integer({ minimum: 0, maximum: 24 * 90, default: 24 }),
      /** How far ahead recurring blocks of a feed are expanded. */
      feed_horizon_days: Type.Integer({ minimum: 1, maximum: 3650, default: 730 }),
    },
    { default: {} },
  ),
  /** Money: fees, refunds and the tax-invoice (DTE) provider (docs/money.md). */
  money: Type.Object(
    {
      /** Commission on a charge, VAT included: percent of the gross plus a fixed amount (gaps.md: 4.5% + 0). */
      fee_percent: Type.Number({ minimum: 0, maximum: 100, default: 4.5 }),
      fee_fixed_in_cents: Type.Integer({ minimum: 0, default: 0 }),
      /** Guatemala's IVA: the part of the commission that is withheld VAT. */
      vat_percent: Type.Number({ minimum: 0, maximum: 100, default: 12 }),
      /** A refund gives the merchant back the fee of the charge it undoes. */
      refund_returns_fee: Type.Boolean({ default: true }),
      /**
       * A peer transfer of more than this many cents (any currency) is held for review: created
       * `in_review`, the money reserved, until released or cancelled (docs/transfers.md). 0: off.
       */
      transfer_review_above_in_cents: Type.Integer({ minimum: 0, default: 0 }),
      tax_invoicing: Type.Object(
        {
          /** Issue a DTE for a cash sale that names a tax_id (an account's settings may turn it off). */
          enabled: Type.Boolean({ default: true }),
          /** `sandbox`: an in-process provider; `http`: POST to `url`, answering `{document_id, url}`. */
          provider: Type.Union([Type.Literal('sandbox'), Type.Literal('http')], { default: 'sandbox' }),
          url: Type.String({ default: '' }),
          api_key: Type.String({ default: '' }),
          /** How long a sale waits for the provider before answering without the invoice. */
          timeout_ms: Type.Integer({ minimum: 1, default: 3000 }),
          /** How often the worker retries invoices the provider could not issue at sale time. */
          retry_interval_ms: Type.Integer({ minimum: 10, default: 30_000 }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
  /** Operations: the manager's status page and /metrics (docs/operations.md). */
  ops: Type.Object(
    {
      /** How long a manager stays logged in to the status page. */
      session_hours: Type.Integer({ minimum: 1, maximum: 24 * 30, default: 12 }),
      /** When set, GET /metrics asks for `Authorization: Bearer <token>`; empty: open (counts only). */
      metrics_token: Type.String({ default: '' }),
      /** Failed status-page logins one address (or one known device) may make per 5 minutes before 429. */
      login_failures_per_address: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
      /** Password checks (scrypt, ~50-100 ms each) run at once; the rest wait in a short line. */
      login_concurrency: Type.Integer({ minimum: 1, maximum: 64, default: 2 }),
      /** Logins waiting for a check past this many are answered 429 at once (never left to time out). */
      login_queue: Type.Integer({ minimum: 0, maximum: 10_000, default: 16 }),
    },
    { default: {} },
  ),
  /**
   * Alerts that reach the manager (docs/operations.md, "Alerts"): each condition that turns the
   * status page red, sent once when it starts and once when it clears, by e-mail and/or a signed
   * webhook. Neither set: alerts stay on the page, doctor and /metrics.
   */
  alerts: Type.Object(
    {
      /** The manager's address(es), comma-separated; empty: no e-mail. */
      email_to: Type.String({ default: '' }),
      /** The SMTP server for alerts (empty host: no e-mail). */
      smtp: Type.Object(
        {
          host: Type.String({ default: '' }),
          port: Type.Integer({ minimum: 1, maximum: 65535, default: 587 }),
          secure: Type.Boolean({ default: false }),
          user: Type.String({ default: '' }),
          password: Type.String({ default: '' }),
          from: Type.String({ default: 'posd <no-reply@localhost>' }),
        },
        { default: {} },
      ),
      /** Where alerts are POSTed as signed JSON (through the outbound guard, webhooks.allow_cidrs); empty: none. */
      webhook_url: Type.String({ default: '' }),
      /** The Standard Webhooks secret (`whsec_` + base64) the webhook is signed with; required with webhook_url. */
      webhook_secret: Type.String({ default: '' }),
      /** How often the conditions are looked at. */
      check_interval_ms: Type.Integer({ minimum: 10, default: 60_000 }),
      /** Timeout of one e-mail or webhook. */
      timeout_ms: Type.Integer({ minimum: 100, default: 10_000 }),
      /**
       * Stored card payments are near their limits (the page turns red, an alert is sent) once they
       * use this fraction of an account's or terminal's `max_total`/`max_count`, or the oldest has
       * waited this fraction of its window (`max_age_hours`).
       */
      stored_near_fraction: Type.Number({ minimum: 0.05, maximum: 1, default: 0.8 }),
    },
    { default: {} },
  ),
  /** Nightly backups: `dir` empty means `<data_dir>/backups`. */
  backup: Type.Object(
    {
      dir: Type.String({ default: '' }),
      /** Local hour of the nightly backup, 0-23; -1 turns the nightly backup off. */
      hour: Type.Integer({ minimum: -1, maximum: 23, default: 3 }),
      /** How many nightly backups to keep (older ones are deleted after a successful backup). */
      keep: Type.Integer({ minimum: 1, maximum: 365, default: 7 }),
      /**
       * Also seals the webhook signing key and the settings inside every backup under this passphrase
       * (scrypt + AES-256-GCM), beside the recovery key they are always sealed to (recovery-key.ts).
       * Usually given as `POSD_BACKUP_PASSPHRASE`; kept for boxes set up before recovery keys.
       */
      passphrase: Type.String({ default: '' }),
    },
    { default: {} },
  ),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/** Every leaf of the schema with its dotted path, so environment names are derived, not listed. */
function leaves(schema: TSchema, path: string[] = []): Array<{ path: string[]; schema: TSchema }> {
  if (schema[Kind] === 'Object' && schema.properties) {
    return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) => leaves(s, [...path, k]));
  }
  return [{ path, schema }];
}

function envName(path: string[]): string {
  return `POSD_${path.join('_').toUpperCase()}`;
}

/** `POSD_*` names read outside the schema's leaves (the loader reads POSD_WRITE_CODE_CACHE). */
const OTHER_ENV = new Set(['POSD_CONFIG', 'POSD_DATA', 'POSD_WRITE_CODE_CACHE']);

/**
 * `POSD_*` variables that name no setting: a misspelt one (POSD_HTP_PORT) would otherwise be
 * ignored in silence, leaving the default the manager meant to change. Each with the known name
 * closest to it (sharing the longest prefix), when one is close.
 */
export function unknownEnvNames(env: Env): Array<{ name: string; nearest: string | null }> {
  const known = [...leaves(ConfigSchema).map((l) => envName(l.path)), ...OTHER_ENV];
  const shared = (a: string, b: string) => {
    let i = 0;
    while (i < a.length && a[i] === b[i]) i++;
    return i;
  };
  return Object.keys(env)
    .filter((k) => k.startsWith('POSD_') && env[k] !== undefined && !known.includes(k))
    .map((name) => {
      const best = known.reduce((a, b) => (shared(name, b) > shared(name, a) ? b : a));
      return { name, nearest: shared(name, best) > 'POSD_'.length ? best : null };
    });
}

function fromEnvText(text: string, schema: TSchema): unknown {
  // A list of objects (terminals.serial) is given as JSON; a list of words or numbers as comma-separated text.
  if (schema[Kind] === 'Array' && text.trim().startsWith('[')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  if (schema[Kind] === 'Array') {
    const parts = text
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    const item = schema.items as TSchema | undefined;
    return item && (item[Kind] === 'Integer' || item[Kind] === 'Number') ? parts.map(Number) : parts;
  }
  if (schema[Kind] === 'Integer' || schema[Kind] === 'Number') return text.trim() === '' ? text : Number(text);
  if (schema[Kind] === 'Boolean') return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : text;
  return text;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]] = value;
}

export interface LoadConfigOptions {
  file?: string;
  env?: Env;
  /** Values from command-line flags: they win over the file and the environment. */
  overrides?: Record<string, unknown>;
}

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`config file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`);
  }
  try {
    const parsed = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    return parsed;
  } catch (err) {
    throw new ConfigError(`config file ${file}: not a JSON object (${(err as Error).message})`);
  }
}

function deepMerge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    if (v === undefined) continue;
    const cur = out[k];
    out[k] =
      typeof v === 'object' && v !== null && !Array.isArray(v) && typeof cur === 'object' && cur !== null && !Array.isArray(cur)
        ? deepMerge(cur as Record<string, unknown>, v as Record<string, unknown>)
        : v;
  }
  return out;
}

/** Load, merge (defaults < file < environment < flags) and validate; throws ConfigError naming the field. */
export function loadConfig(opts: LoadConfigOptions = {}): Config {
  return loadConfigLayers(opts).config;
}

/**
 * `loadConfig`, with what was set before defaults were applied: `posd serve` must know whether the
 * role was asked for (file, environment or flag) or only defaulted, to run a data folder's stored role.
 */
export function loadConfigLayers(opts: LoadConfigOptions = {}): { config: Config; given: Record<string, unknown> } {
  const env = opts.env ?? process.env;
  const file = opts.file ?? env.POSD_CONFIG;
  let raw: Record<string, unknown> = file ? readConfigFile(file) : {};
  const fromEnv: Record<string, unknown> = {};
  for (const leaf of leaves(ConfigSchema)) {
    const text = env[envName(leaf.path)];
    if (text !== undefined) setPath(fromEnv, leaf.path, fromEnvText(text, leaf.schema));
  }
  if (env.POSD_DATA !== undefined) fromEnv.data_dir = env.POSD_DATA;
  raw = deepMerge(deepMerge(raw, fromEnv), opts.overrides ?? {});
  return { config: validateConfig(raw), given: raw };
}

export function validateConfig(raw: unknown): Config {
  // A misspelt setting ({"htp": ...}) was silently ignored, leaving the default the manager meant to change.
  const unknown = unknownKeys(ConfigSchema, raw ?? {}, []);
  if (unknown) throw new ConfigError(`config: ${unknown.path}: unknown setting (known here: ${unknown.known.join(', ')})`);
  const withDefaults = Value.Default(ConfigSchema, Value.Clone(raw ?? {}));
  const first = Value.Errors(ConfigSchema, withDefaults).First();
  if (first) {
    const field = first.path.replace(/^\//, '').replace(/\//g, '.') || '(root)';
    const allowed = literalChoices(first.schema);
    // TypeBox says "Expected union value" for a bad choice; the manager needs the choices.
    const message = allowed ? `must be one of ${allowed.join(', ')} (got ${JSON.stringify(first.value)})` : first.message;
    throw new ConfigError(`config: ${field}: ${message}`);
  }
  const config = withDefaults as Config;
  // Node refuses a header deadline past the whole request's: say so with the setting's name.
  if (config.http.headers_timeout_ms > config.http.request_timeout_ms) {
    throw new ConfigError('config: http.headers_timeout_ms: must not be more than http.request_timeout_ms');
  }
  for (const cidr of config.webhooks.allow_cidrs) {
    if (!isCidr(cidr)) throw new ConfigError(`config: webhooks.allow_cidrs: not a CIDR: ${cidr}`);
  }
  for (const cidr of config.http.own_networks) {
    if (!isCidr(cidr)) throw new ConfigError(`config: http.own_networks: not a CIDR: ${cidr}`);
  }
  if (config.alerts.webhook_url && !/^whsec_[A-Za-z0-9+/]{16,}={0,2}$/.test(config.alerts.webhook_secret)) {
    throw new ConfigError('config: alerts.webhook_secret: alerts.webhook_url needs a signing secret, whsec_ followed by base64');
  }
  if (Boolean(config.tls.cert_file) !== Boolean(config.tls.key_file)) {
    throw new ConfigError('config: tls.cert_file: tls.cert_file and tls.key_file go together');
  }
  if (config.tls.renew_before_days >= config.tls.cert_validity_days) {
    throw new ConfigError('config: tls.renew_before_days: must be less than tls.cert_validity_days');
  }
  config.data_dir = resolve(config.data_dir);
  return config;
}

/** The first key of `value` the schema does not know, with its dotted path, walking objects and lists of objects. */
function unknownKeys(schema: TSchema, value: unknown, path: string[]): { path: string; known: string[] } | undefined {
  if (schema[Kind] === 'Object' && schema.properties && typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const props = schema.properties as Record<string, TSchema>;
    for (const [k, v] of Object.entries(value)) {
      if (!(k in props)) return { path: [...path, k].join('.'), known: Object.keys(props) };
      const inner = unknownKeys(props[k], v, [...path, k]);
      if (inner) return inner;
    }
  }
  if (schema[Kind] === 'Array' && schema.items && Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const inner = unknownKeys(schema.items as TSchema, v, [...path, String(i)]);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** The allowed values of a choice (a union of literals), or undefined for any other schema. */
function literalChoices(schema: TSchema): string[] | undefined {
  if (schema[Kind] !== 'Union') return undefined;
  const options = schema.anyOf as TSchema[];
  if (!options.every((o) => o[Kind] === 'Literal')) return undefined;
  return options.map((o) => String(o.const));
}

/** `10.0.0.0/8`, `192.168.1.5` (one address), `fd00::/8`. */
function isCidr(text: string): boolean {
  const [address, prefix, ...rest] = text.trim().split('/');
  const version = isIP(address);
  if (!version || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128));
}

/** `127.0.0.1`, `::1`, `localhost`: only the box itself reaches them. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Whether posd listens with TLS: `tls.mode`, where `auto` means off loopback only. */
export function tlsEnabled(config: Pick<Config, 'tls' | 'http'>): boolean {
  return config.tls.mode === 'on' || (config.tls.mode === 'auto' && !isLoopbackHost(config.http.host));
}

export function publicBaseUrl(config: Config, listeningPort?: number): string {
  if (config.http.public_url) return config.http.public_url.replace(/\/$/, '');
  const host = config.http.host === '0.0.0.0' || config.http.host === '::' ? '127.0.0.1' : config.http.host;
  const scheme = tlsEnabled(config) ? 'https' : 'http';
  return `${scheme}://${host.includes(':') ? `[${host}]` : host}:${listeningPort ?? config.http.port}`;
}

/**
 * The settings that differ from the defaults, as a nested object a config file may hold (without
 * `data_dir`, which belongs to the box being restored): what a backup carries to rebuild a box.
 */
export function changedSettings(config: Config): Record<string, unknown> {
  const defaults = validateConfig({}) as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const leaf of leaves(ConfigSchema)) {
    if (leaf.path[0] === 'data_dir') continue;
    let value: unknown = config;
    let base: unknown = defaults;
    for (const k of leaf.path) {
      value = (value as Record<string, unknown> | undefined)?.[k];
      base = (base as Record<string, unknown> | undefined)?.[k];
    }
    if (value !== undefined && JSON.stringify(value) !== JSON.stringify(base)) setPath(out, leaf.path, value);
  }
  return out;
}

/** The configuration as it may be logged: nothing here is secret yet, but sections that hold secrets are masked. */
export function maskedConfig(config: Config): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(config, function (this: Record<string, unknown>, key, value) {
      if (/(key|secret|token|password|passphrase)$/i.test(key) && value) return '****';
      // A PostgreSQL URI may carry its password (`postgresql://posd:pw@db/posd`).
      if (key === 'url' && typeof value === 'string') return value.replace(/^([a-z]+:\/\/[^:/@]*:)[^@]*@/i, '$1****@');
      return value;
    }),
  );
}
