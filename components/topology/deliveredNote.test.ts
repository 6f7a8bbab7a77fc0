// The dead-letter list's "delivered N×" (components/topology/deliveredNote.ts): the count the client reports leaves
// out the receive that a receiver settled with a dead-letter, so an SDK dead letter from its first delivery must
// read 1, not 0; the broker's own dead letters are counted as they come. The tooltip says that a replay of other
// dead letters counts too, so an operator does not read a grown count as an endpoint retrying it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WireText } from '@nimbus/sdk/contract';
import { FAILED_TO_HANDLE } from '../../packages/sdk/src/decide.ts';
import { DeadLetterReason } from '../../resolver-worker/resolve.ts';
import { RECEIVER_REASONS, deliveredNote, deliveriesOf } from './deliveredNote.ts';

const sdkPermanent = { reason: 'Permanent failure: PermanentFailureError: no postal code', description: 'no postal code' };

test('a dead letter a receiver settled counts the receive that dead-lettered it', () => {
  assert.equal(deliveriesOf({ deliveryCount: 0, ...sdkPermanent }), 1);
  assert.equal(deliveriesOf({ deliveryCount: 2, ...sdkPermanent }), 3);
  // The SDK's stop on the last delivery uses the broker's reason; its description tells it apart.
  assert.equal(deliveriesOf({ deliveryCount: 9, reason: 'MaxDeliveryCountExceeded', description: 'Delivery 10 of 10 ended transient: timeout' }), 10);
});

test("the broker's own dead letters are counted as the client reports them", () => {
  assert.equal(deliveriesOf({ deliveryCount: 10, reason: 'MaxDeliveryCountExceeded', description: 'The message was delivered 10 times; the subscription allows 10.' }), 10);
  assert.equal(deliveriesOf({ deliveryCount: 0, reason: 'TTLExpiredException', description: 'The message expired and was dead-lettered.' }), 0);
});

test('no count from the broker is no count, not zero', () => {
  assert.equal(deliveriesOf({ deliveryCount: null, ...sdkPermanent }), null);
});

test('the tooltip: the count in the right number, and that a replay which left the dead letter counts', () => {
  assert.match(deliveredNote(1), /^1 time received/);
  assert.match(deliveredNote(2), /^2 times received/);
  assert.match(deliveredNote(1), /any replay that looked at it here and left it in the queue/);
});

test("the broker's other reasons are shown as reported, not given a receive no receiver made", () => {
  for (const reason of ['HeaderSizeExceeded', 'MaxTransferHopCountExceeded', 'SessionIdIsMissing', 'FilterEvaluationException', 'SomethingNew']) {
    assert.equal(deliveriesOf({ deliveryCount: 0, reason, description: 'moved by the broker' }), 0, reason);
  }
  assert.equal(deliveriesOf({ deliveryCount: 3, reason: null, description: null }), 3, 'no reason: as reported');
});

test('reasons a receiver settles with get the receive that dead-lettered it', () => {
  for (const reason of [FAILED_TO_HANDLE, WireText.CommandRefused, 'Validation failed: EventId is required', ...Object.values(DeadLetterReason)]) {
    assert.equal(deliveriesOf({ deliveryCount: 0, reason, description: 'x' }), 1, reason);
  }
});

test("the receiver reasons named here are the SDK's and the Resolver's as written", () => {
  assert.ok(RECEIVER_REASONS.has(FAILED_TO_HANDLE));
  for (const r of Object.values(DeadLetterReason)) assert.ok(RECEIVER_REASONS.has(r), r);
});
