// stop() and the walk of a batch's rest behind a broker call given up (operationTimeoutMs), over the fake client of
// testing/fakeSessionBroker.ts: the real host, dispatcher and session port. Which calls a stop still makes is pure
// logic; the silent connection end to end is packages/sdk/e2e/batchGivenUpStop.test.ts.
// - A link already silent when stop() came (its call in flight then timed out): none of its later calls, and none of
//   the rest of the batch, is started after stop() - stop() waits for that one call, as documented.
// - A stop that began healthy: a slow call of its own budget walk does not cut the walk; every later message on its
//   last delivery is still notified and dead-lettered by the SDK.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusMessage } from '@azure/service-bus';
import { fakeBroker, host } from './testing/fakeSessionBroker.ts';

const CUT = /^stopping during the walk behind a broker call given up/;

describe('stop() while the call in flight of a message on its last delivery does not answer', () => {
  test('no broker call starts after stop(): stop() waits for the call in flight only', async () => {
    // Three messages in the session, each on its last delivery (wire 9 of 10). m-1's handler succeeds and its
    // response send never answers (given up after the bound); stop() is called while that send hangs.
    const broker = fakeBroker({ deliveryCount: 9, batch: [9, 9, 9], hangingSend: 0 });
    let stopCalled = false;
    const afterStop: string[] = [];
    let firstSendStarted!: () => void;
    const sendStarted = new Promise<void>((r) => (firstSendStarted = r));
    type Sender = { sendMessages: (m: ServiceBusMessage, o?: { abortSignal?: AbortSignal }) => unknown };
    const client = broker.client as unknown as { createSender: () => Sender };
    const realCreate = client.createSender;
    client.createSender = () => {
      const s = realCreate();
      const send = s.sendMessages;
      return {
        ...s,
        sendMessages: (m: ServiceBusMessage, o?: { abortSignal?: AbortSignal }) => {
          const p = m.applicationProperties;
          if (stopCalled) afterStop.push(`send ${String(p?.MessageType)} ${String(p?.EventId)}`);
          firstSendStarted();
          return send(m, o);
        },
      };
    };
    const rec = broker.receiver as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const deadLetter = rec.deadLetterMessage!;
    rec.deadLetterMessage = (m: unknown, o: unknown) => {
      if (stopCalled) afterStop.push(`deadLetter ${(m as { messageId: string }).messageId}`);
      return deadLetter(m, o);
    };
    const { h, lines } = host(broker.client);
    await h.start();
    await sendStarted;
    stopCalled = true; // stop() aborts its signal synchronously: the hanging send started before it
    await h.stop();
    // Before the fix m-1's notification and dead-letter were still started, each waiting out its own bound.
    assert.deepEqual(afterStop, [], 'no broker call is started after stop()');
    const cut = lines.filter((l) => CUT.test(l.msg));
    assert.equal(cut.length, 1, 'one warning counts the rest left to the broker');
    assert.equal(cut[0]!.notWalked, 2);
    assert.equal(cut[0]!.onLastDelivery, 2);
    // m-1 itself, on its last delivery, is not redelivered: the SDK's notification and dead-letter were refused, so
    // the broker dead-letters it at the release. Before, the log said it was left for redelivery (twice: the call
    // given up, then the hold).
    const givenUp = lines.filter((l) => l.operation === 'sending a message');
    assert.equal(givenUp.length, 1, 'one warning for the call given up');
    assert.match(givenUp[0]!.msg, /the broker dead-letters it at the release \(MaxDeliveryCountExceeded\)/);
    assert.equal(givenUp[0]!.delivery, 10);
    assert.equal(givenUp[0]!.maxDeliveryCount, 10);
    assert.deepEqual(
      lines.filter((l) => /redeliver/.test(l.msg)).map((l) => l.msg),
      [],
      'nothing claims a redelivery for a message on its last delivery',
    );
  });
});

describe('a stop with no call given up before it', () => {
  test('one slow notification in the stop walk: every later message on its last delivery is still notified and dead-lettered', async () => {
    // m-1 (first delivery) is in its handler when stop() comes; m-2 and m-3 on their last delivery take the budget
    // path under the stop signal. m-2's notification (the first send) does not answer within the bound.
    let inHandler!: () => void;
    const handlerStarted = new Promise<void>((r) => (inHandler = r));
    const broker = fakeBroker({ deliveryCount: 0, batch: [0, 9, 9], hangingSend: 0 });
    const { h, lines } = host(broker.client, {
      handler: (_e, ctx) =>
        new Promise<void>((_, reject) => {
          inHandler();
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error), { once: true });
        }),
    });
    await h.start();
    await handlerStarted;
    await h.stop();
    // Before the fix the walk was cut after m-2's slow notification: m-3 was neither notified nor dead-lettered.
    assert.deepEqual(
      broker.sent.map((m) => `${String(m.MessageType)} ${String(m.EventId)}`),
      ['ErrorResponse e-2', 'ErrorResponse e-3'],
      'both are notified (m-2 attempted, m-3 sent)',
    );
    assert.deepEqual(broker.deadLettered.map((d) => d.messageId), ['m-2', 'm-3'], 'both dead-lettered by the SDK');
    assert.equal(lines.filter((l) => CUT.test(l.msg)).length, 0, 'a healthy stop cuts no walk');
  });
});
