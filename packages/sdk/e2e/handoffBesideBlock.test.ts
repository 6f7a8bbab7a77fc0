// A handoff made by a resubmission while another event blocks the session, on the emulator with the real
// @azure/service-bus client: E0 was dead-lettered, E2 failed since and blocks the session (E3 parked behind it); the
// operator resubmits E0 and its handler hands off. Before, the subscriber refused every completion of that handoff
// (CommandRefused), before and after E2 was skipped; now it is answered Completed and E2 keeps blocking the session
// until it is skipped. The decisions are unit-tested in src/handoffBesideBlock.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry, HandoffClient, PermanentFailureError } from '@nimbus/sdk';
import type { HandoffToken } from '@nimbus/sdk';
import { eventually, storyOf, withHarness } from './harness.ts';

type Customer = { customerId: string; n: number };

test('a handoff made by a resubmission under the block of another event is completed; the block stays until skipped', async () => {
  await withHarness(async (h) => {
    const S = 'HB-1';
    const tokens: HandoffToken[] = [];
    const calls: string[] = [];
    h.host({
      endpointId: 'crm',
      handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
        calls.push(`E${e.n}:${ctx.messageType}`);
        if (e.n === 0 && ctx.messageType === MessageType.ResubmissionRequest)
          tokens.push(ctx.markPendingHandoff('DMF import', 'job-0'));
        else if (e.n === 0) throw new PermanentFailureError('customer record is corrupt');
        else if (e.n === 2) throw new Error('CRM rejected the customer');
      }),
    });
    h.deferredProcessor('crm');
    const pub = h.publisher('shop');
    for (const n of [0, 2, 3]) await pub.publish('CustomerUpdated', { customerId: S, n });
    const first = await h.resolver(S, 6);
    assert.deepEqual(storyOf(first).responses, [
      'ErrorResponse:E0',
      'ErrorResponse:E2',
      'DeferralResponse:E3',
    ]);
    const idOf = (n: number) =>
      String(
        first.find(
          (r) => r.type === 'EventRequest' && r.content.EventContent?.EventJson?.includes(`"n":${n}`),
        )!.props.EventId,
      );
    const [e0, e2] = [idOf(0), idOf(2)];

    // The operator resubmits E0 (DeadLettered may be resubmitted); it runs at once and hands off.
    await h.managerCommand(
      'crm',
      MessageType.ResubmissionRequest,
      { eventId: e0, sessionId: S, eventTypeId: 'CustomerUpdated' },
      eventBody('CustomerUpdated', { customerId: S, n: 0 }),
    );
    const handedOff = await h.resolver(S, 2);
    assert.deepEqual(
      handedOff.map((r) => `${r.type}:${String(r.props.EventId)}`),
      [`ResubmissionRequest:${e0}`, `PendingHandoffResponse:${e0}`],
    );
    assert.equal(tokens.length, 1);

    const handoff = new HandoffClient(h.client);
    try {
      await handoff.complete(tokens[0]!, { imported: 1 });
      const completed = await h.resolver(S, 2);
      // Before: ['HandoffCompletedRequest', 'ErrorResponse'] with DeadLetterReason CommandRefused.
      assert.deepEqual(
        completed.map((r) => `${r.type}:${String(r.props.EventId)}`),
        [`HandoffCompletedRequest:${e0}`, `ResolutionResponse:${e0}`],
      );
      assert.equal(completed[1]!.props.DeadLetterReason, undefined);
      assert.equal(completed[1]!.content.EventContent?.EventJson, '{"imported":1}');
      // E2 still blocks the session; E3 stays parked.
      const state = await h.sessionState('crm', S);
      assert.deepEqual([state.BlockedByEventId, state.PendingHandoffs], [e2, []]);
    } finally {
      await handoff.close();
    }

    // Skipping E2 releases the session: E3 is replayed and handled.
    await h.managerCommand('crm', MessageType.SkipRequest, { eventId: e2, sessionId: S });
    const released = await h.resolver(S, 4);
    assert.deepEqual(
      released.filter((r) => r.type.endsWith('Response')).map((r) => `${r.type}:${String(r.props.EventId)}`),
      [`SkipResponse:${e2}`, `ResolutionResponse:${idOf(3)}`],
    );
    await eventually(
      async () => ((await h.sessionState('crm', S)).BlockedByEventId === null ? true : undefined),
      'the session to be released',
    );
    assert.deepEqual(calls, [
      'E0:EventRequest',
      'E2:EventRequest',
      'E0:ResubmissionRequest',
      'E3:EventRequest',
    ]);
  });
});
