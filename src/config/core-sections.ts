import { Type } from '@sinclair/typebox';

/** Settings of the process itself: role, folder, HTTP and TLS, database, log, limits, sync (src/config.ts). */
export const coreSections = {
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
          /**
           * The leading core runs its projector and the ingest's writes on a thread of their own
           * (src/projector-thread.ts), off the event loop that answers /api. On by default since
           * a quiet box's bench showed the API's p99 during a catch-up halved (decision 0311).
           */
          projector_thread: Type.Boolean({ default: true }),
        },
        { default: {} },
      ),
    },
    { default: {} },
  ),
};
