// A late copy of a resubmission that handed off, on the emulator with the real @azure/service-bus client: E1 failed
// and blocks its session; the operator resubmits it and the handler hands off (job 1), so the session is blocked by
// that resubmission's delivery. A second copy of the same resubmission then arrives with the same MessageId (a
// Manager repeat derives the same id, a console dead-letter replay keeps it). Before, it ran the handler again: a
// second job started and a second PendingHandoffResponse went to the Resolver. Now it is recognised as a copy of the
// delivery that handed off, as a copy of a resubmission that completed is by the inbox, and completed without
// running the handler and without a response. The decisions are unit-tested in src/handoffBesideBlock.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeBody, eventBody, MessageType } from '@nimbus/sdk/contract';
import { HandlerRegistry } from '@nimbus/sdk';
import { storyOf, withHarness, type Harness } from './harness.ts';

type Customer = { customerId: string; n: number };

/**
 * Where both scenarios start: crm's handler fails E1 in session `S`, then hands off the operator's resubmission of it
 * (MessageId 'resubmission-of-E1', job 1), so the session is blocked by that resubmission's delivery. `calls` goes on
 * recording the handler's runs; `sendResubmissionAgain` sends the same resubmission (same MessageId) once more.
 */
async function resubmissionHandedOff(h: Harness, S: string) {
  const calls: string[] = [];
  h.host({
    endpointId: 'crm',
    handlers: new HandlerRegistry().on<Customer>('CustomerUpdated', (e, ctx) => {
      calls.push(`E${e.n}:${ctx.messageType}`);
      if (ctx.messageType === MessageType.ResubmissionRequest)
        ctx.markPendingHandoff('DMF import', `job-${calls.length}`);
      else throw new Error('CRM rejected the customer');
    }),
  });
  await h.publisher('shop').publish('CustomerUpdated', { customerId: S, n: 1 });
  const failed = await h.resolver(S, 2);
  assert.deepEqual(storyOf(failed).responses, ['ErrorResponse:E1']);
  const e1 = String(failed[0]!.props.EventId);

  const resubmission = {
    eventId: e1,
    sessionId: S,
    eventTypeId: 'CustomerUpdated',
    messageId: 'resubmission-of-E1',
  };
  const body = eventBody('CustomerUpdated', { customerId: S, n: 1 });
  const sendResubmission = () => h.managerCommand('crm', MessageType.ResubmissionRequest, resubmission, body);
  await sendResubmission();
  assert.deepEqual(
    (await h.resolver(S, 2)).map((r) => r.type),
    [MessageType.ResubmissionRequest, MessageType.PendingHandoffResponse],
  );
  return { calls, e1, sendResubmissionAgain: sendResubmission };
}

test('a late copy of a resubmission that handed off does not run the handler again', async () => {
  await withHarness(async (h) => {
    const S = 'HC-1';
    const { calls, e1, sendResubmissionAgain } = await resubmissionHandedOff(h, S);
    const blocked = await h.sessionState('crm', S);
    assert.deepEqual([blocked.BlockedByEventId, blocked.BlockedByMessageId], [e1, 'resubmission-of-E1']);

    // The late copy, then a marker behind it: everything it caused is in the Resolver session before the marker's
    // answer (the endpoint handles its session in order).
    await sendResubmissionAgain();
    const rest = await h.resolverRestAfterMarker(S, ['crm']);
    // Before: [ResubmissionRequest, PendingHandoffResponse], the handler run a second time (job 3).
    assert.deepEqual(
      rest.map((r) => r.type),
      [MessageType.ResubmissionRequest],
    );
    assert.deepEqual(calls, ['E1:EventRequest', 'E1:ResubmissionRequest']);
    const after = await h.sessionState('crm', S);
    assert.deepEqual([after.BlockedByEventId, after.BlockedByMessageId], [e1, 'resubmission-of-E1']);
  });
});

// The same resubmission after its handoff failed: the agent reported job 1 failed (the row is Failed, the block
// stays under the resubmission's delivery), then the operator replays the resubmission - the console's dead-letter
// replay keeps its MessageId. Before, it was completed as a copy: no handler run, no answer, the session still
// blocked. Now it runs as a resubmission; here it hands off again (job 2) and is the pending handoff again.
test('a replay of a resubmission whose handoff failed runs the handler again', async () => {
  await withHarness(async (h) => {
    const S = 'HC-2';
    const { calls, e1, sendResubmissionAgain } = await resubmissionHandedOff(h, S);

    await h.managerCommand(
      'crm',
      MessageType.HandoffFailedRequest,
      { eventId: e1, sessionId: S, eventTypeId: 'CustomerUpdated' },
      encodeBody({ ErrorContent: { ErrorText: 'DMF job 2 rejected', ErrorType: 'DmfRejected' } }),
    );
    assert.deepEqual(
      (await h.resolver(S, 2)).map((r) => r.type),
      [MessageType.HandoffFailedRequest, MessageType.ErrorResponse],
    );
    const afterFailure = await h.sessionState('crm', S);
    assert.deepEqual(
      [afterFailure.BlockedByMessageId, afterFailure.FailedHandoffs],
      ['resubmission-of-E1', [{ EventId: e1, MessageId: 'resubmission-of-E1' }]],
    );

    // The replay, then a marker behind it (the endpoint handles its session in order).
    await sendResubmissionAgain();
    const rest = await h.resolverRestAfterMarker(S, ['crm']);
    // Before: [ResubmissionRequest] only, the handler not run, the session still blocked under a Failed row.
    assert.deepEqual(
      rest.map((r) => r.type),
      [MessageType.ResubmissionRequest, MessageType.PendingHandoffResponse],
    );
    assert.deepEqual(calls, ['E1:EventRequest', 'E1:ResubmissionRequest', 'E1:ResubmissionRequest']);
    const after = await h.sessionState('crm', S);
    assert.deepEqual(
      [after.BlockedByEventId, after.BlockedByMessageId, after.FailedHandoffs],
      [e1, 'resubmission-of-E1', []],
    );
  });
});
