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

/** The state `event` takes a row in `from` to, or null when the machine refuses it there (guards included). */
export function nextState<M extends AnyStateMachine>(machine: M, from: StateOf<M>, event: EventFrom<M>): StateOf<M> | null {
  const snapshot = snapshotAt(machine, from);
  if (!snapshot.can(event)) return null;
  const [next] = transition(machine as AnyStateMachine, snapshot, event);
  return next.value as StateOf<M>;
}

/** The state a new row starts in: the machine's own, never a literal beside the INSERT. */
export function initialState<M extends AnyStateMachine>(machine: M): StateOf<M> {
  return initialTransition(machine as AnyStateMachine)[0].value as StateOf<M>;
}

/** Whether no event moves a row out of `state`. */
export function isFinalState<M extends AnyStateMachine>(machine: M, state: StateOf<M>): boolean {
  return snapshotAt(machine, state).status === 'done';
}
