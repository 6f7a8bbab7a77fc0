// A broker call given up mid-batch (operationTimeoutMs: the broker, or the path to it, did not answer), on a real
// host and the embedded emulator: the session is given up, the rest of the batch goes back with it, and releasing
// the session counts a delivery for each. Those on their last delivery used to be dead-lettered by the broker then
// (MaxDeliveryCountExceeded) without a word to the Resolver, whose rows stayed Pending: a transport fault burned
// them. Now they take the SDK's budget path first, as behind any delivery left unsettled (batchUnsettled.test.ts):
// an ErrorResponse, then its own dead-letter with a description that says why.
//
// The emulator's test-only disposition hold leaves ev-1's completion unanswered, as a broker that stops answering
// would; the real @azure/service-bus client waits on it until the host's bound gives it up.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry } from '@nimbus/sdk';
import { endProcessAfterResults, eventually, storyOf, withHarness } from './harness.ts';
import {
  deadLettersOfTwo,
  sendThreeInSession,
  setDeliveryBudget,
  spendToLastBehindFirst,
} from './testing/batchSession.ts';

// The completion left unanswered keeps the client's 60 s settlement timer alive after everything is closed.
endProcessAfterResults();

/** The host's bound on one broker call: short for the test, well above a healthy call on a loaded machine. */
const OPERATION_TIMEOUT_MS = 4_000;

describe('the rest of a batch behind a broker call given up', () => {
  test('the rest on its last delivery is answered MaxDeliveryCountExceeded and dead-lettered by the SDK, not silently by the broker', async () => {
    await withHarness(
      async (h) => {
        const hold = h.emulator.dispositionHold!;
        // A budget of three: ev-1 has a delivery left, ev-2 and ev-3 behind it are on their last.
        await setDeliveryBudget(h, 3);
        await sendThreeInSession(h);
        await spendToLastBehindFirst(h);

        const handled: string[] = [];
        const results: string[] = [];
        h.host({
          endpointId: 'crm',
          maxDeliveryCount: 3,
          maxConcurrentSessions: 1,
          operationTimeoutMs: OPERATION_TIMEOUT_MS,
          transientHold: { initialMs: 100 },
          onDelivery: (result) => {
            results.push(result);
            // ev-1's delivery ended (its completion given up): the broker answers again from here on.
            if (results.length === 1) hold.resume();
          },
          handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (_e, ctx) => {
            handled.push(ctx.eventId);
            // ev-1's first run: its answer goes out, then its completion meets a broker that does not answer.
            if (handled.length === 1) hold.hold();
          }),
        });
        // Read once the broker answers again: the reader's own completions would be held meanwhile.
        await eventually(() => (results.length > 0 ? true : undefined), "ev-1's delivery to end", 30_000);
        assert.ok(hold.held >= 1, "ev-1's completion was left unanswered");
        // Three EventRequests; ev-1's answer from its first run, an ErrorResponse for each of the two behind it,
        // then ev-1's answer from its redelivery (its completion never landed: at least once).
        const records = await h.resolver('S-1', 7, 60_000);
        assert.deepEqual(storyOf(records).responses, [
          'ResolutionResponse:E1',
          'ErrorResponse:E2',
          'ErrorResponse:E3',
          'ResolutionResponse:E1',
        ]);
        const description =
          'Delivery 3 of 3 was cancelled: an earlier broker call of the session did not answer';
        for (const r of records.filter((r) => r.type === 'ErrorResponse')) {
          assert.equal(r.props.DeadLetterReason, 'MaxDeliveryCountExceeded');
          assert.equal(r.props.DeadLetterErrorDescription, description);
        }
        assert.deepEqual(handled, ['ev-1', 'ev-1'], 'no handler runs for the two behind ev-1');
        assert.deepEqual(results, ['transient', 'deadLettered', 'deadLettered', 'completed']);
        // Dead-lettered by the SDK (its description), not by the broker at the release.
        assert.deepEqual(await deadLettersOfTwo(h), [
          ['ev-2', 'MaxDeliveryCountExceeded', description],
          ['ev-3', 'MaxDeliveryCountExceeded', description],
        ]);
      },
      undefined,
      { testDispositionHold: true },
    );
  });
});
