// stop() while the host walks the rest of a batch behind a broker call given up (batchGivenUp.test.ts), on a
// connection gone silent. The walk makes up to five bounded calls for each message of the rest on its last delivery
// (notification, dead-letter, ...), and on a silent connection every one of them waits out its bound. stop() used to
// wait for the whole walk: here about two bounds for each of the eleven messages behind ev-1, ~90 s. Now, once the
// host stops, the walk starts no new broker call: the call in flight ends within its bound, the rest of the batch is
// left to the broker (as on any stop; one warning says how many and how many of them are on their last delivery),
// and stop() returns within that call bound plus its bounded closes.
//
// Then nothing is lost: with a healthy connection again, the messages with deliveries left come back and are handled
// (at least once, in order), and those on their last delivery are in the dead-letter queue. Over a silent path no
// notification reaches the Resolver, walk or no walk (before this change too), so the broker dead-lettered those with
// its own description: the Resolver has nothing for them (Reconcile's rows; docs/sdk.md).
//
// The host reaches the emulator through a TCP fault proxy (server/testing/tcpFaultProxy.ts) with the unmodified
// client; the test's own reads and the restarted host connect directly.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { HandlerRegistry, SubscriberHost } from '@nimbus/sdk';
import { endProcessAfterResults, eventually, stopsWithin, storyOf, withHarness } from './harness.ts';
import { proxiedClients } from './replayHarness.ts';
import { sendInSession, setDeliveryBudget, spendToLast } from './testing/batchSession.ts';

// What stop() gave up on the silent connection (the calls, the closes) leaves timers and sockets behind.
endProcessAfterResults();

/** The host's bound on one broker call: short for the test, well above a healthy call on a loaded machine. */
const OPERATION_TIMEOUT_MS = 4_000;
/**
 * Generous over what stop() may take now (the call in flight, the receiver's close, then the host's closes: three
 * bounds, 12 s), well below what it took before (the whole walk: about two bounds for each of eleven messages).
 */
const STOP_WITHIN_MS = 45_000;
/** ev-1 has a delivery left, ev-2..ev-12 behind it are on their last, ev-13 and ev-14 have one left. */
const COUNT = 14;
const ON_LAST = Array.from({ length: 11 }, (_, i) => i + 2);

describe('stop() during the walk behind a broker call given up, on a silent connection', () => {
  test('returns within the call in flight plus its closes, says once what it left, and loses no message', async (t) => {
    await withHarness(async (h) => {
      await setDeliveryBudget(h, 3);
      await sendInSession(h, COUNT);
      await spendToLast(h, COUNT, ON_LAST);

      const { proxy, clients } = await proxiedClients(h);
      const lines: Array<Record<string, unknown>> = [];
      const logger = pino(
        { level: 'info' },
        new Writable({
          write(chunk: Buffer, _enc, done) {
            for (const text of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(text) as Record<string, unknown>);
            done();
          },
        }),
      );
      const handled: string[] = [];
      let walking!: () => void;
      const walkStarted = new Promise<void>((r) => (walking = r));
      const host = new SubscriberHost({
        client: clients.client,
        endpointId: 'crm',
        maxDeliveryCount: 3,
        maxConcurrentSessions: 1,
        maxMessagesPerReceive: 20,
        operationTimeoutMs: OPERATION_TIMEOUT_MS,
        transientHold: { initialMs: 100 },
        backoff: { initialMs: 50, maxMs: 500 },
        deferredProcessor: false,
        logger,
        // The walk's first message on its last delivery takes the budget path: its notification goes out next.
        observers: [{ onMessageFailed: (m) => void (m.eventId !== 'ev-1' && walking()) }],
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (_e, ctx) => {
          handled.push(ctx.eventId);
          // ev-1's run, with the whole batch in hand: from here on nothing reaches the broker, nor comes back.
          proxy.silence();
        }),
      });
      let stopped: 'stopped' | 'hung' = 'hung';
      let stopMs = 0;
      try {
        await host.start();
        // ev-1's response send is given up after the bound; the walk behind it starts on ev-2.
        await walkStarted;
        assert.deepEqual(handled, ['ev-1']);
        const startedAt = Date.now();
        stopped = await stopsWithin(() => host.stop(), STOP_WITHIN_MS);
        stopMs = Date.now() - startedAt;
      } finally {
        // Resets the silenced connections: the broker takes the session back, counting a delivery for each message.
        await proxy.close();
        void clients.close().catch(() => undefined);
      }
      assert.equal(stopped, 'stopped', `stop() did not return within ${STOP_WITHIN_MS} ms`);
      t.diagnostic(`stop() took ${stopMs} ms`);

      // Said once, with counts only: ev-3..ev-14 were not walked, ev-3..ev-12 of them on their last delivery.
      const left = lines.filter((l) => /rest of the batch is left to the broker/.test(String(l.msg)));
      assert.equal(left.length, 1, 'one warning for what stop() left undone');
      assert.equal(left[0]!.notWalked, 12);
      assert.equal(left[0]!.onLastDelivery, 10);
      assert.equal(left[0]!.sessionId, 'S-1');

      // A healthy connection again: the messages with deliveries left come back and are handled, in order.
      const again: string[] = [];
      h.host({
        endpointId: 'crm',
        maxDeliveryCount: 3,
        maxConcurrentSessions: 1,
        maxMessagesPerReceive: 20,
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (_e, ctx) => void again.push(ctx.eventId)),
      });
      await eventually(() => (again.length >= 3 ? true : undefined), 'ev-1, ev-13 and ev-14 handled after the restart', 30_000);
      // Everything earlier in the session has been handled and answered once a heartbeat sent behind it is answered.
      const rest = await h.resolverRestAfterMarker('S-1', ['crm'], { timeoutMs: 30_000 });
      assert.deepEqual(again, ['ev-1', 'ev-13', 'ev-14']);
      // The audit copies of the 14 EventRequests, then the three answers; nothing for those dead-lettered.
      assert.deepEqual(storyOf(rest).responses, ['ResolutionResponse:E1', 'ResolutionResponse:E13', 'ResolutionResponse:E14']);
      assert.equal(storyOf(rest).requests.length, COUNT);

      // Those on their last delivery: in the dead-letter queue, none vanished. Dead-lettered by the broker when it
      // took the session back (its own description): over the silent path no call of the SDK reached it.
      const dead = await h.awaitDeadLetters('crm', 'crm');
      while (dead.length < ON_LAST.length) dead.push(...(await h.deadLetters('crm', 'crm', 20, 500)));
      assert.deepEqual(
        dead.map((m) => m.applicationProperties?.EventId).sort(),
        ON_LAST.map((n) => `ev-${n}`).sort(),
      );
      for (const m of dead) {
        assert.equal(m.deadLetterReason, 'MaxDeliveryCountExceeded');
        assert.match(String(m.deadLetterErrorDescription), /^The message was delivered 3 times/);
      }
    });
  });
});
