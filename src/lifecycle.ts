import { initialTransition, transition, type AnyMachineSnapshot, type AnyStateMachine, type EventFrom, type SnapshotFrom } from 'xstate';

/**
 * The one helper under every status column that has a lifecycle. A row stores only its state's
 * name, so each question rebuilds the machine's snapshot from that name and asks XState itself
 * (`transition()`: pure, no actor). The machines stay the one place where moves are written.
 */

/** A flat machine's state names, as its snapshot types them. */
export type StateOf<M extends AnyStateMachine> = Extract<SnapshotFrom<M>['value'], string>;

function snapshotAt(machine: AnyStateMachine, state: string): AnyMachineSnapshot {
  // Status machines keep no context: a row's status is the whole state.
  return machine.resolveState({ value: state, context: {} });
}

/**
 * XState's answers, per machine, for the questions that have one answer: the initial state, and the
 * move of an event that carries nothing but its type (its guards see only that type and the empty
 * context, so the answer never changes). Rebuilding a snapshot and transitioning costs tens of
 * microseconds, paid on every hot write otherwise (a transfer asks twice: decision 0245). An event
 * with data is asked of the machine each time: its guards read the data, and timestamps in it
 * would make the cache grow without end.
 */
const answers = new WeakMap<AnyStateMachine, Map<string, string | null>>();

function answersOf(machine: AnyStateMachine): Map<string, string | null> {
  let known = answers.get(machine);
  if (!known) answers.set(machine, (known = new Map()));
  return known;
}

function typeOnly(event: { type: string }): boolean {
  for (const key in event) if (key !== 'type') return false;
  return true;
}

/** The state `event` takes a row in `from` to, or null when the machine refuses it there (guards included). */
export function nextState<M extends AnyStateMachine>(machine: M, from: StateOf<M>, event: EventFrom<M>): StateOf<M> | null {
  const cacheable = typeOnly(event as { type: string });
  const key = cacheable ? `${from}\u0000${(event as { type: string }).type}` : '';
  const known = cacheable ? answersOf(machine) : undefined;
  const hit = known?.get(key);
  if (hit !== undefined) return hit as StateOf<M> | null;
  const snapshot = snapshotAt(machine, from);
  const next = snapshot.can(event) ? (transition(machine as AnyStateMachine, snapshot, event)[0].value as StateOf<M>) : null;
  known?.set(key, next);
  return next;
}

/** The state a new row starts in: the machine's own, never a literal beside the INSERT. */
export function initialState<M extends AnyStateMachine>(machine: M): StateOf<M> {
  const known = answersOf(machine);
  let initial = known.get('');
  if (initial == null) known.set('', (initial = initialTransition(machine as AnyStateMachine)[0].value as string));
  return initial as StateOf<M>;
}

/** Whether no event moves a row out of `state`. */
export function isFinalState<M extends AnyStateMachine>(machine: M, state: StateOf<M>): boolean {
  return snapshotAt(machine, state).status === 'done';
}
