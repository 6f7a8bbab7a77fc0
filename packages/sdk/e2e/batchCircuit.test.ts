// The circuit opening under a batch, on a real host and the embedded emulator: the rest of the batch goes back with
// the session, and releasing the session counts a delivery for each of its messages. Those on their last delivery
// used to be dead-lettered by the broker then (MaxDeliveryCountExceeded) without a word to the Resolver, whose rows
// stayed Pending. Now they take the SDK's budget path: an ErrorResponse to the Resolver, then the SDK's own dead-letter.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, HandlerRegistry } from '@nimbus/sdk';
import { eventually, storyOf, withHarness } from './harness.ts';
import { deadLettersOfTwo, sendThreeInSession, setDeliveryBudget } from './testing/batchSession.ts';

describe('the circuit opens under a batch', () => {
  test('the rest on its last delivery is answered MaxDeliveryCountExceeded and dead-lettered by the SDK, not silently by the broker', async () => {
    await withHarness(async (h) => {
      // A budget of two deliveries, so one delivery spent by the test puts every message on its last.
      await setDeliveryBudget(h, 2);
      await sendThreeInSession(h);
      // The first delivery of each: received and given back with the session (the broker counts it).
      const receiver = await h.client.acceptSession('crm', 'crm', 'S-1');
      const first = await eventually(async () => {
        const got = await receiver.peekMessages(10);
        return got.length === 3 ? got : undefined;
      }, 'the three messages to be in the session');
      assert.equal(first.length, 3);
      const taken: unknown[] = [];
      while (taken.length < 3) taken.push(...(await receiver.receiveMessages(3 - taken.length, { maxWaitTimeInMs: 1000 })));
      await receiver.close();

      const handled: number[] = [];
      const results: string[] = [];
      h.host({
        endpointId: 'crm',
        maxDeliveryCount: 2,
        // Open on the first failure, and stay open for the test: no probe takes the session meanwhile.
        circuitBreaker: new CircuitBreaker({ failureThreshold: 1, openDurationMs: 60_000 }),
        onDelivery: (result) => void results.push(result),
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => {
          handled.push(e.n);
          throw new Error('partner down');
        }),
      });
      // Three EventRequests, E1's ErrorResponse, and one for each message of the rest.
      const records = await h.resolver('S-1', 6, 30_000);
      assert.deepEqual(storyOf(records).responses, ['ErrorResponse:E1', 'ErrorResponse:E2', 'ErrorResponse:E3']);
      const budget = records.filter((r) => r.type === 'ErrorResponse' && r.props.EventId !== 'ev-1');
      for (const r of budget) {
        assert.equal(r.props.DeadLetterReason, 'MaxDeliveryCountExceeded');
        assert.equal(r.props.DeadLetterErrorDescription, 'Delivery 2 of 2 was cancelled: endpoint circuit opened');
      }
      assert.deepEqual(handled, [1], 'no handler runs after the circuit opened');
      assert.deepEqual(results, ['handlerFailed', 'deadLettered', 'deadLettered']);
      assert.deepEqual(
        await deadLettersOfTwo(h),
        [
          ['ev-2', 'MaxDeliveryCountExceeded', 'Delivery 2 of 2 was cancelled: endpoint circuit opened'],
          ['ev-3', 'MaxDeliveryCountExceeded', 'Delivery 2 of 2 was cancelled: endpoint circuit opened'],
        ],
      );
    });
  });
});
