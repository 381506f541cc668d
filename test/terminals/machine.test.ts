import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyCommandEvent,
  FINAL_STATUSES,
  initialCommand,
  restoreCommand,
  type CommandEvent,
  type Transitioned,
} from '../../src/modules/terminals/commands/machine.js';

const at = '2026-01-01T00:00:00.000Z';
const result = (outcome: 'approved' | 'declined' | 'canceled' | 'error'): CommandEvent => ({
  type: 'RESULT',
  at,
  outcome,
  authorization_code: null,
  card: null,
  processor_reference: null,
  reason: null,
});

function run(events: CommandEvent[]): Transitioned {
  let cur = initialCommand();
  for (const e of events) cur = applyCommandEvent(cur.snapshot, e) ?? cur;
  return cur;
}

describe('the command machine', () => {
  it.each([
    [[{ type: 'CANCEL', at }], 'canceled'],
    [
      [
        { type: 'OFFER', at },
        { type: 'CANCEL', at },
      ],
      'cancel_requested',
    ],
    [[{ type: 'SUPERSEDE', at }], 'superseded'],
    [
      [
        { type: 'OFFER', at },
        { type: 'SUPERSEDE', at },
      ],
      'pending',
    ],
    [
      [
        { type: 'OFFER', at },
        { type: 'TAKEN', at },
      ],
      'dispatched',
    ],
    [[{ type: 'OFFER', at }, { type: 'TAKEN', at }, { type: 'CANCEL', at }, result('approved')], 'consumed'],
    [[{ type: 'OFFER', at }, { type: 'TAKEN', at }, { type: 'CANCEL', at }, result('canceled')], 'canceled'],
    [[{ type: 'OFFER', at }, { type: 'TAKEN', at }, result('declined')], 'failed'],
    [[{ type: 'OFFER', at }, { type: 'TAKEN', at }, result('error')], 'failed'],
    [
      [
        { type: 'OFFER', at },
        { type: 'CANCEL', at },
        { type: 'NOT_HELD', at },
      ],
      'canceled',
    ],
    [
      [
        { type: 'OFFER', at },
        { type: 'TAKEN', at },
        { type: 'CANCEL', at },
        { type: 'NOT_HELD', at },
      ],
      'cancel_requested',
    ],
    [
      [
        { type: 'OFFER', at },
        { type: 'NOT_HELD', at },
        { type: 'CANCEL', at },
      ],
      'canceled',
    ],
  ] as Array<[CommandEvent[], string]>)('%j ends %s', (events, status) => {
    const end = run(events);
    expect(end.status).toBe(status);
    expect(end.final).toBe((FINAL_STATUSES as readonly string[]).includes(status));
  });

  it('announces its effects: settle on an outcome, sendCancel on a cancel the terminal must hear', () => {
    const taken = run([
      { type: 'OFFER', at },
      { type: 'TAKEN', at },
    ]);
    expect(applyCommandEvent(taken.snapshot, { type: 'CANCEL', at })!.effects.map((e) => e.type)).toEqual(['sendCancel']);
    const settled = applyCommandEvent(taken.snapshot, result('approved'))!;
    expect(settled.effects).toEqual([{ type: 'settle', params: expect.objectContaining({ outcome: 'approved' }) }]);
    expect(applyCommandEvent(initialCommand().snapshot, { type: 'CANCEL', at })!.effects).toEqual([]);
  });

  it('persists as JSON and resumes from it (a restart at any moment)', () => {
    const mid = run([
      { type: 'OFFER', at },
      { type: 'TAKEN', at },
      { type: 'CANCEL', at: '2026-01-01T00:00:05.000Z' },
    ]);
    const restored = restoreCommand(JSON.parse(JSON.stringify(mid.snapshot)));
    expect(restored.value).toBe('cancel_requested');
    expect(restored.context.cancellationRequestedAt).toBe('2026-01-01T00:00:05.000Z');
    expect(applyCommandEvent(mid.snapshot, result('approved'))!.status).toBe('consumed');
  });

  const eventArb: fc.Arbitrary<CommandEvent> = fc.oneof(
    fc.constantFrom<CommandEvent>({ type: 'OFFER', at }, { type: 'TAKEN', at }, { type: 'CANCEL', at }, { type: 'SUPERSEDE', at }, { type: 'NOT_HELD', at }),
    fc.constantFrom('approved', 'declined', 'canceled', 'error').map((o) => result(o as 'approved')),
  );

  it('never declares canceled a command the terminal may hold, unless the terminal says so (property)', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 25 }), (events) => {
        let cur = initialCommand();
        for (const e of events) {
          const before = cur;
          const next = applyCommandEvent(cur.snapshot, e);
          if (before.final) expect(next).toBeNull(); // a final command never changes
          if (!next) continue;
          if (next.status === 'canceled') {
            const terminalSaidSo = (e.type === 'RESULT' && e.outcome === 'canceled') || (e.type === 'NOT_HELD' && !before.context.taken);
            const neverOffered = e.type === 'CANCEL' && !before.context.offered;
            expect(terminalSaidSo || neverOffered).toBe(true);
          }
          if (e.type === 'RESULT' && e.outcome === 'approved') expect(next.status).toBe('consumed');
          if (before.context.taken) expect(next.context.taken).toBe(true);
          cur = next;
        }
      }),
      { numRuns: 2000 },
    );
  });
});
