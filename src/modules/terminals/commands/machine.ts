import { assign, initialTransition, setup, transition, type SnapshotFrom } from 'xstate';

/**
 * The lifecycle of a terminal session command (spec 3.3): the ONLY place its transitions are
 * written. The service feeds it events and persists the resulting snapshot in the same transaction
 * as every other effect; nothing else sets `status`.
 *
 * The cancel rule: once a terminal may hold a command (the charge was offered to it), a cancel only
 * asks (`cancel_requested`); `canceled` comes from the terminal's own `canceled` result, or from the
 * terminal showing it never took the command. A payment that may have reached the processor is
 * never declared canceled. Nor does that rest on terminal firmware alone: a `canceled` result after
 * the terminal reported `authorizing` is recorded as reported but settles nothing; the command stays
 * open and the terminal is asked its status, and only its answer (the stored result again, or what
 * really happened) settles it.
 */

export type CommandStatus = 'pending' | 'dispatched' | 'cancel_requested' | 'canceled' | 'superseded' | 'stored' | 'consumed' | 'failed';
export const FINAL_STATUSES: readonly CommandStatus[] = ['canceled', 'superseded', 'consumed', 'failed'];

export interface TerminalOutcome {
  /** `stored` (protocol 2): approved offline by the terminal; the stored payment's own machine takes it from there. */
  outcome: 'approved' | 'declined' | 'canceled' | 'error' | 'stored';
  authorization_code: string | null;
  card: { network: string; last4: string } | null;
  processor_reference: string | null;
  /** When the terminal timestamped its reference (nexo's POITransactionID): a terminal refund names both. */
  processor_reference_at?: string | null;
  reason: string | null;
  /** The terminal's reference of a stored payment; absent before protocol 2. */
  offline_reference?: string | null;
}

export interface CommandContext {
  /** The charge was handed to the terminal's link: from here the terminal may hold it. */
  offered: boolean;
  /** The terminal acknowledged the charge or reported progress on it. */
  taken: boolean;
  cancellationRequestedAt: string | null;
  canceledAt: string | null;
  result: (TerminalOutcome & { at: string }) | null;
  /** The terminal said `authorizing`: the charge may have reached the processor. */
  authorizing?: boolean;
  /** When a `canceled` result came after `authorizing`, unverified until a status request answers. */
  canceledReportedAt?: string | null;
}

export type CommandEvent =
  | { type: 'OFFER'; at: string }
  /** The terminal reconnected without this command and without a result for it, and had never taken it. */
  | { type: 'NOT_HELD'; at: string }
  /** `ack` or `progress`. The stage itself is not state: the terminal, not posd, decides what a cancel can still stop. */
  | { type: 'TAKEN'; at: string; stage?: string }
  | { type: 'CANCEL'; at: string }
  | { type: 'SUPERSEDE'; at: string }
  | ({ type: 'RESULT'; at: string } & TerminalOutcome)
  /** The stored payment of a `stored` command reached its final state (stored/service.ts). */
  | { type: 'STORED_OUTCOME'; at: string; approved: boolean };

export type SettleParams = TerminalOutcome & { at: string };

const notOffered = ({ context }: { context: CommandContext }) => !context.offered;
const notTaken = ({ context }: { context: CommandContext }) => !context.taken;

const resultTransitions = [
  {
    // A cancel the terminal claims after authorizing is checked first (see the rule above).
    guard: ({ context, event }: { context: CommandContext; event: CommandEvent }) =>
      event.type === 'RESULT' && event.outcome === 'canceled' && context.authorizing === true && !context.canceledReportedAt,
    actions: ['markCanceledReported', 'requestStatus'],
  },
  {
    guard: ({ event }: { event: CommandEvent }) => event.type === 'RESULT' && event.outcome === 'approved',
    target: 'consumed',
    actions: ['recordResult', { type: 'settle', params: ({ event }: { event: CommandEvent }) => event as SettleParams }],
  },
  {
    guard: ({ event }: { event: CommandEvent }) => event.type === 'RESULT' && (event.outcome === 'declined' || event.outcome === 'error'),
    target: 'failed',
    actions: ['recordResult', { type: 'settle', params: ({ event }: { event: CommandEvent }) => event as SettleParams }],
  },
  {
    // The terminal is done (it holds the card's payment); the command says `stored` until the
    // stored payment's outcome: a till must not print "paid" for a card that may be declined later.
    guard: ({ event }: { event: CommandEvent }) => event.type === 'RESULT' && event.outcome === 'stored',
    target: 'stored',
    actions: ['recordResult', { type: 'storePayment', params: ({ event }: { event: CommandEvent }) => event as SettleParams }],
  },
  {
    guard: ({ event }: { event: CommandEvent }) => event.type === 'RESULT' && event.outcome === 'canceled',
    target: 'canceled',
    actions: ['recordResult', 'markCanceled', 'abandonPayment'],
  },
] as const;

export const commandMachine = setup({
  types: {
    context: {} as CommandContext,
    events: {} as CommandEvent,
  },
  actions: {
    // Effects the service performs inside the same transaction; named here, implemented there.
    settle: (_, _params: SettleParams) => {},
    storePayment: (_, _params: SettleParams) => {},
    sendCancel: () => {},
    /** The checkout turns payment_in_progress while a terminal may be charging it (it cannot be edited). */
    startPayment: () => {},
    /** ...and back to unpaid once the terminal is known not to charge it. */
    abandonPayment: () => {},
    markOffered: assign({ offered: true }),
    markNotOffered: assign({ offered: false }),
    markTaken: assign(({ context, event }) => ({
      taken: true,
      authorizing: context.authorizing === true || (event.type === 'TAKEN' && event.stage === 'authorizing'),
    })),
    markCanceledReported: assign(({ event }) => ({ canceledReportedAt: event.at })),
    /** Ask the terminal what became of the command (the bridge sends `status_request`). */
    requestStatus: () => {},
    markCancelRequested: assign(({ context, event }) => ({ cancellationRequestedAt: context.cancellationRequestedAt ?? event.at })),
    markCanceled: assign(({ context, event }) => ({ canceledAt: context.canceledAt ?? event.at })),
    recordResult: assign(({ event }) => {
      if (event.type !== 'RESULT') return {};
      const { type: _t, ...result } = event;
      return { result };
    }),
  },
  guards: { notOffered, notTaken },
}).createMachine({
  id: 'terminal-session-command',
  initial: 'pending',
  context: {
    offered: false,
    taken: false,
    cancellationRequestedAt: null,
    canceledAt: null,
    result: null,
  },
  states: {
    pending: {
      on: {
        OFFER: { guard: 'notOffered', actions: ['markOffered', 'startPayment'] },
        NOT_HELD: { guard: ({ context }) => context.offered, actions: ['markNotOffered', 'abandonPayment'] },
        TAKEN: [
          { guard: 'notOffered', target: 'dispatched', actions: ['markOffered', 'markTaken', 'startPayment'] },
          { target: 'dispatched', actions: 'markTaken' },
        ],
        CANCEL: [
          { guard: 'notOffered', target: 'canceled', actions: 'markCanceled' },
          // Offered but not yet acknowledged: the terminal may already be reading a card.
          { target: 'cancel_requested', actions: ['markCancelRequested', 'sendCancel'] },
        ],
        SUPERSEDE: { guard: 'notOffered', target: 'superseded' },
        RESULT: [...resultTransitions],
      },
    },
    dispatched: {
      on: {
        TAKEN: { actions: 'markTaken' },
        CANCEL: { target: 'cancel_requested', actions: ['markCancelRequested', 'sendCancel'] },
        RESULT: [...resultTransitions],
      },
    },
    cancel_requested: {
      on: {
        TAKEN: { actions: 'markTaken' },
        // The terminal came back without the command and had never taken it: nothing can be charged.
        NOT_HELD: { guard: 'notTaken', target: 'canceled', actions: ['markCanceled', 'abandonPayment'] },
        RESULT: [...resultTransitions],
      },
    },
    // Not final for the till, but the terminal is done with it (see terminalDone): no cancel, no
    // other result; only the stored payment's outcome moves it.
    stored: {
      on: {
        STORED_OUTCOME: [{ guard: ({ event }) => event.approved, target: 'consumed' }, { target: 'failed' }],
      },
    },
    canceled: { type: 'final' },
    superseded: { type: 'final' },
    consumed: { type: 'final' },
    failed: { type: 'final' },
  },
});

type CommandSnapshot = SnapshotFrom<typeof commandMachine>;

export interface PersistedCommand {
  value: CommandStatus;
  context: CommandContext;
}

export interface Transitioned {
  status: CommandStatus;
  final: boolean;
  context: CommandContext;
  /** JSON of XState's persisted snapshot, stored beside the row. */
  snapshot: string;
  /** Named effects the service must perform in the same transaction. */
  effects: Array<{ type: string; params?: unknown }>;
}

function describe(snap: CommandSnapshot, effects: Transitioned['effects']): Transitioned {
  return {
    status: snap.value as CommandStatus,
    final: snap.status === 'done',
    context: snap.context,
    snapshot: JSON.stringify(commandMachine.getPersistedSnapshot(snap)),
    effects,
  };
}

/**
 * What the `final` column holds: the terminal is done with the command (nothing more to send it, no
 * cancel possible). A `stored` command is done for the terminal though its outcome is still to come.
 */
export function terminalDone(t: Pick<Transitioned, 'final' | 'status'>): boolean {
  return t.final || t.status === 'stored';
}

let initial: Transitioned | undefined;

/** The same for every command (no input): computed once, not through XState on every charge. */
export function initialCommand(): Transitioned {
  if (!initial) {
    const [snap] = initialTransition(commandMachine);
    initial = describe(snap, []);
    Object.freeze(initial.context);
    Object.freeze(initial.effects);
  }
  return initial;
}

/** Rebuilds a snapshot from its stored JSON (rehydration after a restart). */
export function restoreCommand(snapshotJson: string): CommandSnapshot {
  const persisted = JSON.parse(snapshotJson) as PersistedCommand;
  return commandMachine.resolveState({ value: persisted.value, context: persisted.context });
}

const EFFECTS = new Set(['settle', 'storePayment', 'sendCancel', 'startPayment', 'abandonPayment', 'requestStatus']);

function sameContext(a: CommandContext, b: CommandContext): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Applies one event to a stored command. Returns null when the machine does not accept the event
 * in the command's state (a duplicate result, a cancel of a final command): nothing changes.
 */
export function applyCommandEvent(snapshotJson: string, event: CommandEvent): Transitioned | null {
  const before = restoreCommand(snapshotJson);
  if (!before.can(event)) return null;
  const [after, actions] = transition(commandMachine, before, event);
  const effects = actions.filter((a) => EFFECTS.has(a.type)).map((a) => ({ type: a.type, params: a.params }));
  const next = describe(after, effects);
  // A transition that changes nothing (a second progress report, say) is not a change: no write.
  if (effects.length === 0 && next.status === before.value && sameContext(next.context, before.context)) return null;
  return next;
}
