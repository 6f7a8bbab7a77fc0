// Which dead letters a replay skips or refuses as futile (deadLetterEvent.ts replayWarningOf): decided from the
// DeadLetterReason the SDK wrote and the message's type, so only the subscriber's own dead letter of the command is
// marked - never the ErrorResponse notice that carries the same reason to the Resolver, whose replay is sound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Prop, WireText } from '@nimbus/sdk/contract';
import { replayWarningOf } from './deadLetterEvent.ts';

const typed = (t: string) => ({ [Prop.MessageType]: t, [Prop.EventId]: 'e-1' });

test('a refused Manager command is marked, whichever command; its notice to the Resolver is not', () => {
  for (const t of [MessageType.ResubmissionRequest, MessageType.SkipRequest, MessageType.HandoffCompletedRequest, MessageType.HandoffFailedRequest]) {
    assert.equal(replayWarningOf(WireText.CommandRefused, typed(t))?.code, 'CommandRefused', t);
  }
  assert.equal(replayWarningOf(WireText.CommandRefused, typed(MessageType.ErrorResponse)), null, 'the notice');
  assert.equal(replayWarningOf(WireText.CommandRefused, {}), null, 'no MessageType: not known to be a command');
});

test('a resubmission with no room for its handoff is marked; the other reasons are not', () => {
  assert.equal(replayWarningOf('PendingHandoffsFull', typed(MessageType.ResubmissionRequest))?.code, 'PendingHandoffsFull');
  assert.equal(replayWarningOf('PendingHandoffsFull', typed(MessageType.ErrorResponse)), null, 'its notice');
  // Replay is the remedy for these (a transient budget spent, a store throttle), or only warned of (a permanent
  // failure: replayed after a fix it may pass).
  for (const reason of ['MaxDeliveryCountExceeded', WireText.CosmosDbThrottled, 'Permanent failure: PermanentFailureError: bad', null]) {
    assert.equal(replayWarningOf(reason, typed(MessageType.EventRequest)), null, String(reason));
  }
});
