// A replay pass whose broker connection drops in the middle must fail and be retried soon, not hang the endpoint's
// deferred processor. The processor handles one trigger at a time, so one broker call that never answers stalls
// the replay of every session of the endpoint, and stop() waits for it. That is what left 91 erpendpoint rows
// Deferred in a run of e2e/chaos.test.ts: the broker was cut while the processor was in a pass; the session
// receiver's completeMessage (like its close, acceptSession and the sender's sendMessages) then waited for the
// client's own 60 s operation timeout and longer (about 90 s measured), no pass ran after the outage, the
// settling wait saw nothing move and ended, and "demo endpoints did not stop within 20 s".
//
// The processor here reaches the emulator through a TCP fault proxy (server/testing/tcpFaultProxy.ts) with the
// unmodified @azure/service-bus client; the connection is reset at one exact point of the pass: when it completes
// its first parked message, after that message's replayed copy was sent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { ServiceBusReceivedMessage, ServiceBusSessionReceiver } from '@azure/service-bus';
import { DeferredProcessor } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { endProcessAfterResults, eventually, stopsWithin, withHarness } from './harness.ts';
import { parkAndTrigger, proxiedClients, replayedSequences, replayProcessor } from './replayHarness.ts';

endProcessAfterResults(); // a reset connection leaves timers and socket requests behind (harness.ts)

const SESSION = 'DROP-1';
const PARKED = 3;

test('a connection reset while a replay pass settles a parked message: the pass is retried and every parked message comes back', async () => {
  await withHarness(async (h) => {
    const proxied = await proxiedClients(h, { client: { retryOptions: { timeoutInMs: 4000 } } });
    const { client } = proxied.clients;
    // The fault: the first parked message the processor completes finds its connection reset (and refused for a
    // second); everything before it (the accept, the peek, the receive, the copy's send) went through.
    let cut: number | undefined;
    const acceptSession = client.acceptSession.bind(client);
    client.acceptSession = (async (...args: Parameters<typeof acceptSession>) => {
      const receiver: ServiceBusSessionReceiver = await acceptSession(...args);
      const complete = receiver.completeMessage.bind(receiver);
      receiver.completeMessage = async (message: ServiceBusReceivedMessage) => {
        if (cut === undefined) {
          cut = Date.now();
          await proxied.proxy.cut();
          setTimeout(() => void proxied.proxy.restore(), 1000);
        }
        return complete(message);
      };
      return receiver;
    }) as typeof client.acceptSession;

    const { processor, passes } = replayProcessor(client, { operationTimeoutMs: 3000 });
    // What comes back to the main subscription, read directly (not through the proxy).
    const main = await h.client.acceptSession('crm', 'crm', SESSION);
    let stopped = 'not stopped';
    try {
      processor.start();
      await parkAndTrigger(h, SESSION, PARKED, 'ev-drop');

      // Every parked sequence comes back as a replayed copy (the first one possibly twice: its copy was sent
      // before the reset, and the retried pass finds it still parked). The client alone takes 60 s and more to
      // give up on the completion; the wait below is shorter, so a processor that waits for it fails here.
      const sequences = await replayedSequences(main, passes, PARKED, 30_000);
      assert.ok(cut !== undefined, 'the connection was reset during the pass');
      assert.deepEqual([...sequences].sort(), [0, 1, 2]);
      // The retried pass reports only after completing its last parked message and its trigger, which can come
      // after its copies are back on a loaded machine: wait for its report rather than read the list at once.
      await eventually(
        () => (passes.at(-1)?.outcome === 'replayed' ? true : undefined),
        `the retried pass's report (passes: ${passes.map((p) => p.outcome).join(', ')})`,
        20_000,
      ).catch(() => undefined);
      const outcomes = passes.map((p) => p.outcome);
      assert.deepEqual(outcomes.slice(-1), ['replayed'], `passes: ${outcomes.join(', ')}`);
      assert.ok(outcomes.includes('failed'), `the interrupted pass is reported failed (passes: ${outcomes.join(', ')})`);
      assert.equal((await h.deadLetters('crm', 'DeferredProcessor', 10, 300)).length, 0, 'the trigger was dead-lettered');
    } finally {
      // stop() must not wait for a call the reset left hanging either.
      stopped = await stopsWithin(() => processor.stop(), 15_000);
      await main.close().catch(() => undefined);
      await proxied.close();
    }
    assert.equal(stopped, 'stopped', 'the deferred processor did not stop within 15 s');
  });
});

test('the client closed under a running processor (its owner shutting down first): renewing the trigger receiver fails, is logged and retried, and stop() still returns', async () => {
  // Seen in e2e/chaos.test.ts's teardown: the demo's client was closed before its processor had stopped. The failed
  // receive renews the trigger receiver, and createReceiver throws at once on a closed client; that throw ended the
  // processor's loop as an unhandled rejection after the test.
  await withHarness(async (h) => {
    const warnings: string[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          for (const line of chunk.toString('utf8').split('\n'))
            if (line.trim()) warnings.push(String((JSON.parse(line) as { msg?: unknown }).msg));
          done();
        },
      }),
    );
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const own = createServiceBusClients(h.emulator.connectionString);
    const processor = new DeferredProcessor({
      client: own.client,
      endpointId: 'crm',
      triggerWaitMs: 500,
      backoff: { initialMs: 50, maxMs: 200 },
      operationTimeoutMs: 3000,
      logger,
    });
    try {
      processor.start();
      await own.close();
      const renewals = () => warnings.filter((w) => w.startsWith('renewing the trigger receiver failed')).length;
      await eventually(() => (renewals() >= 2 ? true : undefined), 'two failed renewals logged', 15_000).catch(
        (error: unknown) => {
          throw new Error(`${(error as Error).message} (warnings: ${warnings.join(' | ') || 'none'})`);
        },
      );
      const stopped = await stopsWithin(() => processor.stop(), 10_000);
      assert.equal(stopped, 'stopped', 'the deferred processor did not stop within 10 s');
      assert.deepEqual(unhandled.map(String), [], 'the processor loop ended with an unhandled error');
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await processor.stop().catch(() => undefined);
    }
  });
});
