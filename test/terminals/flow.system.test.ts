import { afterEach, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

describe.each(['websocket', 'serial'] as const)('a full charge over %s', (transport) => {
  it('dispatches, reports progress, settles approved then acknowledges', async () => {
    h = await startHarness(transport);
    const t = h.terminal;
    const created = await h.charge({ amount_in_cents: 2500, description: 'Coffee', tax_id: 'CF', installments: 3 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'pending', final: false, amount_in_cents: 2500, terminal_availability: 'available' });
    const id = created.body.id;

    const charge = await t.next('charge');
    expect(charge).toMatchObject({ command_id: id, amount_in_cents: 2500, currency: 'GTQ', installments: 3, description: 'Coffee', tax_id: 'CF' });
    const acked = h.handled((m) => m.type === 'ack');
    await t.ack(id);
    await acked;
    const dispatched = await h.get(id);
    expect(dispatched).toMatchObject({ status: 'dispatched', checkout_status: 'payment_in_progress' });
    // While the terminal may be charging it, the checkout cannot change under it.
    const edit = await h.server.api('PATCH', `/checkouts/${dispatched.checkout_id}`, { body: { metadata: { note: 'x' } } });
    expect(edit.status).toBe(422);

    const progressed = h.handled((m) => m.type === 'progress');
    await t.progress(id, 'authorizing');
    await progressed;
    await t.result(id, 'approved');
    const ack = await t.next('result_ack');
    expect(ack.command_id).toBe(id);
    const done = await h.get(id);
    expect(done).toMatchObject({ status: 'consumed', final: true, checkout_status: 'paid' });

    const terminal = (await h.server.api('GET', `/terminals/${h.terminalId}`)).body;
    expect(terminal).toMatchObject({ availability: 'available', model: 'scripted-1', firmware: '2.3.4' });
    expect(terminal.last_seen_at).toEqual(expect.any(String));
  });
});
