import type { Migration } from '../migrate.js';

/** Bookable things, bookings, class sessions and calendar feeds (spec 2.1, 2.2, 2.5; gaps.md). */
export const scheduling: Migration = {
  version: 50,
  name: 'scheduling',
  up: `
    CREATE TABLE sched_services (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      kind TEXT NOT NULL CHECK (kind IN ('appointment', 'class', 'lodging')),
      name TEXT NOT NULL,
      description TEXT,
      duration_minutes INTEGER NOT NULL,
      processing_minutes INTEGER NOT NULL DEFAULT 0,
      final_minutes INTEGER NOT NULL DEFAULT 0,
      price_in_cents INTEGER NOT NULL,
      currency TEXT NOT NULL,
      product_id TEXT,
      payment_policy TEXT NOT NULL CHECK (payment_policy IN ('none', 'card_on_file', 'deposit', 'full')),
      deposit_in_cents INTEGER,
      protection_in_cents INTEGER,
      hold_minutes INTEGER,
      capacity INTEGER,
      max_guests INTEGER,
      active INTEGER NOT NULL DEFAULT 1,
      metadata TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sched_services_account ON sched_services(account_id, live_mode, created_at);

    CREATE TABLE sched_staff_members (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      name TEXT NOT NULL,
      email TEXT,
      phone TEXT,
      service_ids TEXT NOT NULL DEFAULT '[]',
      active INTEGER NOT NULL DEFAULT 1,
      metadata TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sched_staff_account ON sched_staff_members(account_id, live_mode, created_at);

    CREATE TABLE sched_resources (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      name TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('room', 'chair', 'equipment', 'lodging_unit')),
      room_type_id TEXT REFERENCES sched_services(id),
      active INTEGER NOT NULL DEFAULT 1,
      -- Secret part of the public .ics URL; anyone holding the URL reads the unit's busy nights.
      calendar_token TEXT NOT NULL UNIQUE,
      metadata TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sched_resources_account ON sched_resources(account_id, live_mode, created_at);
    CREATE INDEX sched_resources_room_type ON sched_resources(room_type_id);

    CREATE TABLE sched_class_sessions (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      service_id TEXT NOT NULL REFERENCES sched_services(id),
      name TEXT NOT NULL,
      staff_member_id TEXT REFERENCES sched_staff_members(id),
      resource_id TEXT REFERENCES sched_resources(id),
      starts_at TEXT NOT NULL,
      ends_at TEXT NOT NULL,
      capacity INTEGER NOT NULL,
      cancelled_at TEXT,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sched_class_sessions_account ON sched_class_sessions(account_id, live_mode, starts_at);

    CREATE TABLE sched_booking_series (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      frequency TEXT NOT NULL CHECK (frequency IN ('daily', 'weekly')),
      interval INTEGER NOT NULL,
      count INTEGER NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;

    CREATE TABLE sched_bookings (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed', 'checked_in', 'completed', 'cancelled', 'no_show')),
      source TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('appointment', 'class_seat', 'stay')),
      service_id TEXT NOT NULL REFERENCES sched_services(id),
      requires_acceptance INTEGER NOT NULL DEFAULT 0 CHECK (requires_acceptance IN (0, 1)),
      starts_at TEXT NOT NULL,
      ends_at TEXT NOT NULL,
      customer_id TEXT NOT NULL,
      customer_name TEXT,
      customer_email TEXT,
      customer_phone TEXT,
      segments TEXT NOT NULL,
      staff_member_id TEXT,
      resource_id TEXT,
      class_session_id TEXT REFERENCES sched_class_sessions(id),
      stay TEXT,
      payment_policy TEXT NOT NULL,
      currency TEXT NOT NULL,
      total_in_cents INTEGER NOT NULL,
      due_in_cents INTEGER NOT NULL,
      paid_in_cents INTEGER NOT NULL DEFAULT 0,
      balance_in_cents INTEGER NOT NULL,
      balance_paid_outside_at TEXT,
      checkout_id TEXT,
      checkout_url TEXT,
      balance_checkout_id TEXT,
      balance_checkout_url TEXT,
      no_show_fee_checkout_id TEXT,
      booking_series_id TEXT REFERENCES sched_booking_series(id),
      access_token TEXT NOT NULL,
      customer_note TEXT,
      merchant_note TEXT,
      accepted_at TEXT,
      hold_expires_at TEXT,
      cancelled_by TEXT,
      cancellation_reason TEXT,
      rescheduled_from_id TEXT,
      -- Refund bookkeeping of declinations and class cancellations: a seat is refunded at most once.
      payment_intent_ids TEXT NOT NULL DEFAULT '[]',
      refund_due INTEGER NOT NULL DEFAULT 0 CHECK (refund_due IN (0, 1)),
      -- Why a refund is owed: 'declined', 'class_session_cancelled' (retried by calling again) or
      -- 'late_payment' (a checkout paid after its booking was cancelled; the worker refunds it).
      refund_reason TEXT,
      refunded_at TEXT,
      refund_ids TEXT NOT NULL DEFAULT '[]',
      refunded_intent_ids TEXT NOT NULL DEFAULT '[]',
      refund_error TEXT,
      metadata TEXT NOT NULL DEFAULT '{}',
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sched_bookings_time ON sched_bookings(account_id, live_mode, starts_at);
    CREATE INDEX sched_bookings_session ON sched_bookings(class_session_id, status);
    CREATE INDEX sched_bookings_pending ON sched_bookings(status, hold_expires_at);
    CREATE INDEX sched_bookings_customer ON sched_bookings(customer_id);
    CREATE INDEX sched_bookings_refund_due ON sched_bookings(refund_due, refund_reason);

    -- What a booking or class session occupies: a staff member's or resource's time, or a unit's
    -- nights (subject 'night:<res_id>', times are dates). Rows exist only while the slot is held, so
    -- the overlap check is one indexed query inside the booking's IMMEDIATE transaction.
    CREATE TABLE sched_occupancy (
      owner_id TEXT NOT NULL,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      subject TEXT NOT NULL,
      starts_at TEXT NOT NULL,
      ends_at TEXT NOT NULL,
      CHECK (starts_at < ends_at)
    ) STRICT;
    CREATE INDEX sched_occupancy_subject ON sched_occupancy(subject, starts_at);
    CREATE INDEX sched_occupancy_owner ON sched_occupancy(owner_id);

    CREATE TABLE sched_service_tabs (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      booking_id TEXT NOT NULL REFERENCES sched_bookings(id),
      status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
      items TEXT NOT NULL DEFAULT '[]',
      checkout_id TEXT,
      checkout_url TEXT,
      created_at TEXT NOT NULL,
      closed_at TEXT
    ) STRICT;

    CREATE TABLE sched_ical_feeds (
      id TEXT PRIMARY KEY,
      account_id TEXT NOT NULL,
      live_mode INTEGER NOT NULL CHECK (live_mode IN (0, 1)),
      resource_id TEXT NOT NULL REFERENCES sched_resources(id),
      label TEXT NOT NULL,
      url TEXT NOT NULL,
      last_synced_at TEXT,
      last_error TEXT,
      next_sync_at TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE INDEX sched_ical_feeds_resource ON sched_ical_feeds(resource_id);
    CREATE INDEX sched_ical_feeds_due ON sched_ical_feeds(next_sync_at);

    -- Nights a feed blocks, replaced as a whole after each good read (a failed read keeps them).
    CREATE TABLE sched_feed_blocks (
      feed_id TEXT NOT NULL REFERENCES sched_ical_feeds(id),
      resource_id TEXT NOT NULL,
      start_on TEXT NOT NULL,
      end_on TEXT NOT NULL,
      uid TEXT,
      summary TEXT,
      CHECK (start_on < end_on)
    ) STRICT;
    CREATE INDEX sched_feed_blocks_resource ON sched_feed_blocks(resource_id, start_on);
    CREATE INDEX sched_feed_blocks_feed ON sched_feed_blocks(feed_id);
  `,
};
