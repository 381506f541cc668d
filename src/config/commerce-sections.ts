import { Type } from '@sinclair/typebox';
import { smtpSettings } from './ops-sections.js';

/** Settings of the selling areas: terminals, reports, connected accounts, subscriptions, contracts, accounts, events. */
export const commerceSections = {
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
       * how long a PaymentRequest may wait for its answer; how often a payment a nexo terminal
       * approved offline is asked for (TransactionStatusRequest) until its outcome is known (0: never).
       */
      nexo_ca_file: Type.String({ default: '' }),
      nexo_sale_id: Type.String({ minLength: 1, maxLength: 64, default: 'posd' }),
      nexo_payment_timeout_ms: Type.Integer({ minimum: 1_000, default: 180_000 }),
      nexo_stored_poll_ms: Type.Integer({ minimum: 0, default: 60_000 }),
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
      smtp: smtpSettings(),
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
};
