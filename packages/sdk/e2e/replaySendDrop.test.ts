// A connection reset while the deferred processor's first replay send opens its link: the pass fails after the
// processor's bound and is retried, and the caller's client (which the processor shares) recovers within seconds.
// A send caught opening its link by the reset holds that link's lock on a claim request nobody answers, and the
// client's reconnect waits for that lock, so every call on the client waited for the client's 60 s operation
// timeout. The bound alone does not help: a send given up but not aborted still holds the lock. Measured with this
// test before the processor aborted its given-up calls: the probe send below went through 59 s after the restore.
// Once the client recovered that fast, the trigger of the given-up pass stayed locked for minutes: the client's
// automatic renewal of its lock outlived the trigger receiver closed after the reset, so the processor now holds a
// trigger's lock itself, only while its pass runs.
//
// The client here has @azure/service-bus's default 60 s operation timeout, as an adapter's would; it reaches the
// emulator through a TCP fault proxy (server/testing/tcpFaultProxy.ts). The test's publisher and its reader of the
// main subscription connect directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusSender } from '@azure/service-bus';
import { eventBody, MessageType, Prop } from '@nimbus/sdk/contract';
import { DeferredProcessor } from '@nimbus/sdk';
import type { ReplayPass } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { startTcpFaultProxy } from '../../../server/testing/tcpFaultProxy.ts';
import { endProcessAfterResults, eventually, stopsWithin, withHarness } from './harness.ts';

endProcessAfterResults(); // a reset connection leaves timers and socket requests behind (harness.ts)

const SESSION = 'SEND-DROP-1';
const PARKED = 3;
/** Well under the client's 60 s operation timeout, which is what a client whose reconnect waited for it takes. */
const RECOVERY_MS = 30_000;

test('a connection reset while a replay send opens its link: other calls on the same client recover within seconds, and every parked message comes back', async () => {
  await withHarness(async (h) => {
    const proxy = await startTcpFaultProxy({ port: h.emulator.port });
    const proxied = createServiceBusClients(
      h.emulator.connectionString.replace(`:${h.emulator.port};`, `:${proxy.port};`),
    );
    // The fault: the processor's first send (its sender's link is opened lazily, by that send) finds the connection
    // reset while it opens the link, and refused for a second.
    let cut: Promise<void> | undefined;
    const createSender = proxied.client.createSender.bind(proxied.client);
    proxied.client.createSender = ((...args: Parameters<typeof createSender>) => {
      const sender: ServiceBusSender = createSender(...args);
      if (args[0] !== 'crm') return sender; // the probe's
      const send = sender.sendMessages.bind(sender);
      sender.sendMessages = (...sendArgs: Parameters<typeof send>) => {
        const sending = send(...sendArgs);
        cut ??= (async () => {
          await proxy.cut();
          await new Promise((r) => setTimeout(r, 1000));
          await proxy.restore();
        })();
        return sending;
      };
      return sender;
    }) as typeof proxied.client.createSender;

    const passes: ReplayPass[] = [];
    const processor = new DeferredProcessor({
      client: proxied.client,
      endpointId: 'crm',
      drainWaitMs: 300,
      triggerWaitMs: 1000,
      backoff: { initialMs: 50, maxMs: 500 },
      operationTimeoutMs: 3000,
      onPass: (p) => void passes.push(p),
    });
    const main = await h.client.acceptSession('crm', 'crm', SESSION);
    // Another sender of the same client, opened before the reset: it must send again soon after.
    const probe = proxied.client.createSender('shop');
    let stopped = 'not stopped';
    try {
      await probe.sendMessages({ body: 'before', applicationProperties: { [Prop.To]: 'nobody' } });
      processor.start();
      for (let s = 0; s < PARKED; s++)
        await h.send('crm', {
          sessionId: SESSION,
          body: eventBody('CustomerUpdated', { customerId: SESSION, n: s }),
          props: {
            [Prop.To]: 'Deferred',
            [Prop.MessageType]: MessageType.EventRequest,
            [Prop.EventId]: `ev-send-drop-${s}`,
            [Prop.EventTypeId]: 'CustomerUpdated',
            [Prop.DeferralSequence]: s,
            [Prop.OriginalSessionId]: SESSION,
          },
        });
      await h.send('crm', {
        sessionId: SESSION,
        props: {
          [Prop.To]: 'DeferredProcessor',
          [Prop.MessageType]: MessageType.ProcessDeferredRequest,
          [Prop.EventId]: 'ev-send-drop-trigger',
          [Prop.ReplayUntil]: PARKED,
        },
      });
      await eventually(() => (cut ? true : undefined), 'the processor’s first replay send', 30_000);
      await cut;

      // The client alone holds a stuck link open for 60 s; the probe's wait is shorter, so it fails on such a client.
      const restoredAt = Date.now();
      const sent = await stopsWithin(
        () => probe.sendMessages({ body: 'after', applicationProperties: { [Prop.To]: 'nobody' } }),
        RECOVERY_MS,
      );
      assert.equal(sent, 'stopped', `a send on the same client did not go through within ${RECOVERY_MS} ms of the restore`);
      const probeMs = Date.now() - restoredAt;

      const sequences = new Set<number>();
      await eventually(
        async () => {
          for (const m of await main.receiveMessages(10, { maxWaitTimeInMs: 500 })) {
            sequences.add(Number(m.applicationProperties?.[Prop.ReplaySequence]));
            await main.completeMessage(m);
          }
          return sequences.size === PARKED ? true : undefined;
        },
        'every parked sequence replayed after the reset',
        RECOVERY_MS,
      ).catch((error: unknown) => {
        const got = [...sequences].join(', ') || 'none';
        const seen = passes.map((p) => p.outcome).join(', ') || 'none';
        throw new Error(`${(error as Error).message} (sequences back: ${got}; passes: ${seen}; probe send ${probeMs} ms)`);
      });
      assert.deepEqual([...sequences].sort(), [0, 1, 2]);
      const outcomes = passes.map((p) => p.outcome);
      assert.deepEqual(outcomes.slice(-1), ['replayed'], `passes: ${outcomes.join(', ')}`);
    } finally {
      stopped = await stopsWithin(() => processor.stop(), 15_000);
      await main.close().catch(() => undefined);
      await probe.close().catch(() => undefined);
      await proxied.close().catch(() => undefined);
      await proxy.close();
    }
    assert.equal(stopped, 'stopped', 'the deferred processor did not stop within 15 s');
  });
});
