// A replay pass that outlasts its trigger's lock keeps the trigger: the processor renews the trigger's lock itself
// while the pass runs (the client's automatic renewal is off for the trigger receiver, since it outlived receivers
// closed after a connection reset; replaySendDrop.test.ts). Without the renewal, completing the trigger at the end
// of the pass failed on the lost lock and the pass was reported failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServiceBusSender } from '@azure/service-bus';
import { eventBody, MessageType, Prop } from '@nimbus/sdk/contract';
import { DeferredProcessor } from '@nimbus/sdk';
import type { ReplayPass } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { eventually, withHarness } from './harness.ts';

const SESSION = 'LOCK-1';
/** Twice the harness subscriptions' lock duration (PT5S): the trigger's lock must be renewed during the pass. */
const SLOW_SEND_MS = 10_000;

test('a replay pass longer than its trigger’s lock completes the trigger and reports the pass replayed', async () => {
  await withHarness(async (h) => {
    const own = createServiceBusClients(h.emulator.connectionString);
    // The processor's first replayed copy is sent only after the trigger's original lock has run out.
    let slowed = false;
    const createSender = own.client.createSender.bind(own.client);
    own.client.createSender = ((...args: Parameters<typeof createSender>) => {
      const sender: ServiceBusSender = createSender(...args);
      const send = sender.sendMessages.bind(sender);
      sender.sendMessages = async (...sendArgs: Parameters<typeof send>) => {
        if (!slowed) {
          slowed = true;
          await new Promise((r) => setTimeout(r, SLOW_SEND_MS));
        }
        return send(...sendArgs);
      };
      return sender;
    }) as typeof own.client.createSender;
    const passes: ReplayPass[] = [];
    const processor = new DeferredProcessor({
      client: own.client,
      endpointId: 'crm',
      drainWaitMs: 300,
      triggerWaitMs: 1000,
      backoff: { initialMs: 50, maxMs: 500 },
      onPass: (p) => void passes.push(p),
    });
    try {
      processor.start();
      for (let s = 0; s < 2; s++)
        await h.send('crm', {
          sessionId: SESSION,
          body: eventBody('CustomerUpdated', { customerId: SESSION, n: s }),
          props: {
            [Prop.To]: 'Deferred',
            [Prop.MessageType]: MessageType.EventRequest,
            [Prop.EventId]: `ev-lock-${s}`,
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
          [Prop.EventId]: 'ev-lock-trigger',
          [Prop.ReplayUntil]: 2,
        },
      });
      await eventually(() => (passes.length > 0 ? true : undefined), 'the pass', 60_000);
      assert.ok(slowed, 'the pass sent a copy');
      assert.deepEqual(passes[0], { sessionId: SESSION, replayed: 2, outcome: 'replayed' });
      assert.equal((await h.deadLetters('crm', 'DeferredProcessor', 10, 300)).length, 0, 'the trigger was dead-lettered');
    } finally {
      await processor.stop();
      await own.close();
    }
  });
});
