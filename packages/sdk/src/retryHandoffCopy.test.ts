// Review 44-f: a RetryRequest whose handler handed off, redelivered after its state write (its completion refused,
// the lock lost, a crash), ran the handler again: a second external job and a second PendingHandoffResponse for one
// scheduled retry. The EventRequest (delivery of the blocking event itself) and the ResubmissionRequest (handedOffByThis,
// docs/sdk.md "A copy of the resubmission that handed off") were both recognised as copies; the retry was not. Now it
// is, by the same rule (docs/sdk.md, "A copy of the retry that handed off"). The broker path is in
// e2e/retryHandoffCopy.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emptySessionState, eventBody, markHandoffFailed } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { block, route } from './decide.ts';
import type { DecisionEnv } from './decide.ts';
import { Dispatcher } from './dispatcher.ts';
import { HandlerRegistry } from './handlers.ts';
import { fromReceived } from './inbound.ts';
import type { InboundMessage, ReceivedLike } from './inbound.ts';
import { FakeDeliveryPort } from './testing/fakeDeliveryPort.ts';

function retry(deliveryCount: number): ReceivedLike {
  return {
    messageId: 'retry-e2-1',
    sessionId: 's1',
    correlationId: 'c1',
    enqueuedTimeUtc: new Date('2026-12-07T03:59:00Z'),
    deliveryCount,
    body: eventBody('OrderPlaced', { orderId: 'o1' }),
    applicationProperties: {
      To: 'Retry',
      MessageType: 'RetryRequest',
      EventId: 'e2',
      EventTypeId: 'OrderPlaced',
      OriginatingMessageId: 'm-e2',
      ParentMessageId: 'm-e2',
      RetryCount: 1,
    },
  };
}

test('a redelivered RetryRequest that handed off does not run the handler (or hand off) a second time', async () => {
  let runs = 0;
  const handlers = new HandlerRegistry().on('OrderPlaced', (_e, ctx) => {
    runs++;
    ctx.markPendingHandoff('DMF import', `job-${runs}`);
  });
  const dispatcher = new Dispatcher({ endpointId: 'billing', handlers });
  // e2 failed on its first delivery (m-e2): the session is blocked by it and a RetryRequest was scheduled.
  const port = new FakeDeliveryPort({ ...emptySessionState(), BlockedByEventId: 'e2', BlockedByMessageId: 'm-e2' });

  // First delivery of the retry: the handler hands off; the state write lands, the completion is refused.
  port.failOn = 'complete';
  const first = await dispatcher.dispatch(retry(1), port, new AbortController().signal);
  assert.equal(first, 'transient');
  assert.equal(runs, 1);
  assert.equal(port.state.BlockedByMessageId, 'retry-e2-1', 'the handoff blocks the session under the retry');
  assert.deepEqual(port.log, ['send PendingHandoffResponse', 'setState']);

  // The broker redelivers the retry (same MessageId). The handoff is already recorded under it.
  port.failOn = undefined;
  port.log = [];
  await dispatcher.dispatch(retry(2), port, new AbortController().signal);
  assert.equal(runs, 1, 'the handler ran again: a second external job for one retry');
  assert.deepEqual(port.log, ['complete'], 'a second PendingHandoffResponse went to the Resolver');
});

// The same recognition as a resubmission's copy (handedOffByThis), at decision level.
const decisionEnv: DecisionEnv = {
  endpointId: 'billing',
  clock: { startedAt: new Date('2026-12-07T04:00:00Z'), now: new Date('2026-12-07T04:00:00Z') },
  sdkVersion: '9.9.9',
  newId: () => 'r1',
  hasHandler: (t) => t === 'OrderPlaced',
};
const failedE2 = { ...emptySessionState(), BlockedByEventId: 'e2', BlockedByMessageId: 'm-e2' };
const retryMessage = (messageId = 'retry-e2-1') => fromReceived({ ...retry(1), messageId });
const routeKind = (m: InboundMessage, state: SessionState) => {
  const r = route(m, state, decisionEnv);
  return r.kind === 'settle' ? r.settlement.effects.map((e) => e.kind) : r.kind;
};

test('the retry of a failure still runs; a copy of the retry that handed off does not; a retry with another MessageId does', () => {
  assert.equal(routeKind(retryMessage(), failedE2), 'invoke');
  const handedOff = block(failedE2, retryMessage());
  assert.deepEqual(routeKind(retryMessage(), handedOff), ['complete'], 'the copy ran the handler again');
  // A retry with another MessageId (not the delivery that handed off) is not a copy.
  assert.equal(routeKind(retryMessage('retry-e2-2'), handedOff), 'invoke');
});

test('a copy of a retry whose handoff was replaced by a resubmission of the event is completed, not run', () => {
  // The retry handed off (job 1), then the operator resubmitted the event and that handed off too (job 2): the
  // block is the resubmission's now, the retry's is over (ReleasedBlocks). A late copy of the retry (a console
  // dead-letter replay keeps its MessageId) would start a third job and take the block over again.
  const resubmitted = block(
    block(failedE2, retryMessage()),
    fromReceived({
      ...retry(1),
      messageId: 'resub-e2',
      applicationProperties: { ...retry(1).applicationProperties, MessageType: 'ResubmissionRequest', From: 'Manager' },
    }),
  );
  assert.equal(resubmitted.BlockedByMessageId, 'resub-e2');
  assert.deepEqual(routeKind(retryMessage(), resubmitted), ['complete']);
});

test('a replay of a retry whose handoff then failed runs the handler again, as a resubmission would', () => {
  // The agent reported the retry's job failed (row Failed, the block stays under the retry's delivery); a delivery
  // of that retry now is an operator's replay (console dead-letter replay), not a copy of a pending handoff.
  const failedHandoff = markHandoffFailed(block(failedE2, retryMessage()), 'e2', 'retry-e2-1');
  assert.equal(routeKind(retryMessage(), failedHandoff), 'invoke');
});
