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
import { Prop } from '@nimbus/sdk/contract';
import { endProcessAfterResults, eventually, stopsWithin, withHarness } from './harness.ts';
import { aroundSends, parkAndTrigger, proxiedClients, replayedSequences, replayProcessor } from './replayHarness.ts';

endProcessAfterResults(); // a reset connection leaves timers and socket requests behind (harness.ts)

const SESSION = 'SEND-DROP-1';
const PARKED = 3;
/** Well under the client's 60 s operation timeout, which is what a client whose reconnect waited for it takes. */
const RECOVERY_MS = 30_000;

test('a connection reset while a replay send opens its link: other calls on the same client recover within seconds, and every parked message comes back', async () => {
  await withHarness(async (h) => {
    const proxied = await proxiedClients(h);
    const { client } = proxied.clients;
    // The fault: the processor's first send (its sender's link is opened lazily, by that send) finds the connection
    // reset while it opens the link, and refused for a second.
    let cut: Promise<void> | undefined;
    aroundSends(client, (entityPath, send) => {
      const sending = send();
      if (entityPath !== 'crm') return sending; // the probe's
      cut ??= (async () => {
        await proxied.proxy.cut();
        await new Promise((r) => setTimeout(r, 1000));
        await proxied.proxy.restore();
      })();
      return sending;
    });

    const { processor, passes } = replayProcessor(client, { operationTimeoutMs: 3000 });
    const main = await h.client.acceptSession('crm', 'crm', SESSION);
    // Another sender of the same client, opened before the reset: it must send again soon after.
    const probe = client.createSender('shop');
    let stopped = 'not stopped';
    try {
      await probe.sendMessages({ body: 'before', applicationProperties: { [Prop.To]: 'nobody' } });
      processor.start();
      await parkAndTrigger(h, SESSION, PARKED, 'ev-send-drop');
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

      const sequences = await replayedSequences(main, passes, PARKED, RECOVERY_MS, `probe send ${probeMs} ms`);
      assert.deepEqual([...sequences].sort(), [0, 1, 2]);
      const outcomes = passes.map((p) => p.outcome);
      assert.deepEqual(outcomes.slice(-1), ['replayed'], `passes: ${outcomes.join(', ')}`);
    } finally {
      stopped = await stopsWithin(() => processor.stop(), 15_000);
      await main.close().catch(() => undefined);
      await probe.close().catch(() => undefined);
      await proxied.close();
    }
    assert.equal(stopped, 'stopped', 'the deferred processor did not stop within 15 s');
  });
});
