// A replay pass that outlasts its trigger's lock keeps the trigger: the processor renews the trigger's lock itself
// while the pass runs (the client's automatic renewal is off for the trigger receiver, since it outlived receivers
// closed after a connection reset; replaySendDrop.test.ts). Without the renewal, completing the trigger at the end
// of the pass failed on the lost lock and the pass was reported failed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { eventually, withHarness } from './harness.ts';
import { aroundSends, parkAndTrigger, replayProcessor } from './replayHarness.ts';

const SESSION = 'LOCK-1';
/** Twice the harness subscriptions' lock duration (PT5S): the trigger's lock must be renewed during the pass. */
const SLOW_SEND_MS = 10_000;

test('a replay pass longer than its trigger’s lock completes the trigger and reports the pass replayed', async () => {
  await withHarness(async (h) => {
    const own = createServiceBusClients(h.emulator.connectionString);
    // The processor's first replayed copy is sent only after the trigger's original lock has run out.
    let slowed = false;
    aroundSends(own.client, async (_entityPath, send) => {
      if (!slowed) {
        slowed = true;
        await new Promise((r) => setTimeout(r, SLOW_SEND_MS));
      }
      return send();
    });
    const { processor, passes } = replayProcessor(own.client);
    try {
      processor.start();
      await parkAndTrigger(h, SESSION, 2, 'ev-lock');
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
