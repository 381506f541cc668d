import { Type } from '@sinclair/typebox';

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

/** Settings of what runs beside the API: webhooks, scheduling, money, operations, alerts, backups. */
export const opsSections = {
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
      smtp: smtpSettings(),
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
};
