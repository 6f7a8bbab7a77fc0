// A delivery left unsettled with the circuit closed, on a real host and the embedded emulator: the rest of its batch
// goes back with the session, and releasing the session counts a delivery for each of its messages. Those on their
// last delivery used to be dead-lettered by the broker then (MaxDeliveryCountExceeded) without a word to the
// Resolver, whose rows stayed Pending. Now they take the SDK's budget path: an ErrorResponse, then its own dead-letter.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry, TransientError } from '@nimbus/sdk';
import { storyOf, withHarness } from './harness.ts';
import { deadLettersOfTwo, sendThreeInSession, setDeliveryBudget, spendToLastBehindFirst } from './testing/batchSession.ts';

describe('the rest of a batch behind a delivery left unsettled (circuit closed)', () => {
  test('the rest on its last delivery is answered MaxDeliveryCountExceeded and dead-lettered by the SDK, not silently by the broker', async () => {
    await withHarness(async (h) => {
      // A budget of three deliveries: the test spends one of ev-1's and two of ev-2's and ev-3's, so ev-1 has one
      // left and the two behind it are on their last.
      await setDeliveryBudget(h, 3);
      await sendThreeInSession(h);
      await spendToLastBehindFirst(h);

      const handled: string[] = [];
      const results: string[] = [];
      h.host({
        endpointId: 'crm',
        maxDeliveryCount: 3,
        transientHold: { initialMs: 100 },
        onDelivery: (result) => void results.push(result),
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e, ctx) => {
          handled.push(ctx.eventId);
          // ev-1's first run here: the downstream is briefly away; it is left for redelivery and succeeds next time.
          if (handled.length === 1) throw new TransientError('downstream briefly unavailable');
        }),
      });
      // Three EventRequests, an ErrorResponse for each of the two behind ev-1, then ev-1's ResolutionResponse.
      const records = await h.resolver('S-1', 6, 30_000);
      assert.deepEqual(storyOf(records).responses, ['ErrorResponse:E2', 'ErrorResponse:E3', 'ResolutionResponse:E1']);
      const description = 'Delivery 3 of 3 was cancelled: an earlier message of the session was left for redelivery';
      for (const r of records.filter((r) => r.type === 'ErrorResponse')) {
        assert.equal(r.props.DeadLetterReason, 'MaxDeliveryCountExceeded');
        assert.equal(r.props.DeadLetterErrorDescription, description);
      }
      assert.deepEqual(handled, ['ev-1', 'ev-1'], 'no handler runs for the two behind ev-1');
      assert.deepEqual(results, ['transient', 'deadLettered', 'deadLettered', 'completed']);
      assert.deepEqual(
        await deadLettersOfTwo(h),
        [
          ['ev-2', 'MaxDeliveryCountExceeded', description],
          ['ev-3', 'MaxDeliveryCountExceeded', description],
        ],
      );
    });
  });
});
