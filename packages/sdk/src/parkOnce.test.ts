// A message is parked once, however often it is delivered: a park writes the session state after the parked copy
// went out, then completes the delivery, and a completion that fails then (refused, the lock lost) brings the same
// delivery back. Before, the redelivery parked it again under the next sequence - two parked copies, and the replay
// ran the event twice. Pure logic over a fake DeliveryPort around the real Dispatcher; the broker path is in
// e2e/replay.test.ts ("a message whose completion fails after it was parked ...").
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Long from 'long';
import { emptySessionState, eventBody } from './contract/index.ts';
import type { SessionState } from './contract/index.ts';
import { Dispatcher } from './dispatcher.ts';
import { HandlerRegistry } from './handlers.ts';
import { FakeDeliveryPort } from './testing/fakeDeliveryPort.ts';

/** A delivery of event e2 (MessageId m2); the broker's sequence number is a Long, as @azure/service-bus gives it. */
const delivery = (deliveryCount: number, sequenceNumber = 41) => ({
  messageId: 'm2',
  sessionId: 's1',
  deliveryCount,
  sequenceNumber: Long.fromNumber(sequenceNumber),
  body: eventBody('OrderPlaced', { n: 2 }),
  applicationProperties: {
    To: 'billing',
    From: 'shop',
    MessageType: 'EventRequest',
    EventId: 'e2',
    EventTypeId: 'OrderPlaced',
  },
});

const blocked = (): SessionState => ({
  ...emptySessionState(),
  BlockedByEventId: 'e1',
  BlockedByMessageId: 'm1',
});
/** Released, two parked messages not replayed yet: a new message parks behind them and asks for a pass. */
const draining = (): SessionState => ({ ...emptySessionState(), NextDeferralSequence: 2, DeferredCount: 2 });

const signal = new AbortController().signal;

function dispatcher(ran: { count: number }) {
  return new Dispatcher({
    endpointId: 'billing',
    handlers: new HandlerRegistry().on('OrderPlaced', () => void ran.count++),
  });
}

describe('a message is parked once', () => {
  // A completion refused and one under a lost lock fail alike here: the broker has the message again.
  test('blocked session, the completion after the park refused: the redelivery completes it without parking again', async () => {
    const ran = { count: 0 };
    const d = dispatcher(ran);
    const port = new FakeDeliveryPort(blocked());
    port.failOn = 'complete';
    assert.equal(await d.dispatch(delivery(1), port, signal), 'transient');
    assert.deepEqual(port.log, ['send DeferralResponse', 'send EventRequest', 'setState']);
    assert.deepEqual(port.parkedCopies(), [0]);
    assert.equal(port.state.NextDeferralSequence, 1);

    port.failOn = undefined;
    port.log = [];
    // Before: parked again under sequence 1 (a second DeferralResponse and parked copy, the state moved to 2), so
    // the replay ran e2 twice.
    assert.equal(await d.dispatch(delivery(2), port, signal), 'deferred');
    assert.deepEqual(port.log, ['complete'], 'nothing sent again, the state not written again');
    assert.deepEqual(port.parkedCopies(), [0], 'one parked copy');
    assert.equal(port.state.NextDeferralSequence, 1);
    assert.equal(port.state.DeferredCount, 1);
    assert.equal(ran.count, 0);
  });

  test('behind a drain, the replay request after the state write refused: the redelivery sends it, then completes', async () => {
    const d = dispatcher({ count: 0 });
    const port = new FakeDeliveryPort(draining());
    port.failOn = 'send ProcessDeferredRequest';
    assert.equal(await d.dispatch(delivery(1), port, signal), 'transient');
    assert.deepEqual(port.log, ['send DeferralResponse', 'send EventRequest', 'setState']);

    port.failOn = undefined;
    port.log = [];
    assert.equal(await d.dispatch(delivery(2), port, signal), 'deferred');
    assert.deepEqual(port.log, ['send ProcessDeferredRequest', 'complete']);
    const request = port.sent.find((m) => m.props.MessageType === 'ProcessDeferredRequest')!;
    assert.equal(request.props.ReplayUntil, 3, 'a pass that includes it');
    assert.deepEqual(port.parkedCopies(), [2]);
    assert.equal(port.state.NextDeferralSequence, 3);
  });

  test('the redelivery of a park whose state write failed parks it under the same sequence (the copy is the same)', async () => {
    const d = dispatcher({ count: 0 });
    const port = new FakeDeliveryPort(blocked());
    port.failOn = 'setState';
    assert.equal(await d.dispatch(delivery(1), port, signal), 'transient');
    port.failOn = undefined;
    assert.equal(await d.dispatch(delivery(2), port, signal), 'deferred');
    assert.deepEqual(port.parkedCopies(), [0, 0]);
    assert.equal(new Set(port.sent.filter((m) => m.props.To === 'Deferred').map((m) => m.messageId)).size, 1);
    assert.equal(port.state.NextDeferralSequence, 1);
  });

  test('a re-publish with the same MessageId (a new broker sequence number) is parked as a message of its own', async () => {
    const d = dispatcher({ count: 0 });
    const port = new FakeDeliveryPort(blocked());
    assert.equal(await d.dispatch(delivery(1, 41), port, signal), 'deferred');
    assert.equal(await d.dispatch(delivery(1, 42), port, signal), 'deferred');
    assert.deepEqual(port.parkedCopies(), [0, 1]);
    assert.equal(port.state.NextDeferralSequence, 2);
  });
});
