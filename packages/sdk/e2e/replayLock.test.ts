// A replay pass that outlasts its trigger's lock keeps the trigger: the processor renews the trigger's lock itself
// while the pass runs (the client's automatic renewal is off for the trigger receiver, since it outlived receivers
// closed after a connection reset; replaySendDrop.test.ts). Without the renewal, completing the trigger at the end
// of the pass failed on the lost lock and the pass was reported failed.
// Under clock skew (the trigger's lock expiry shifted as the processor's client reads it, 10 min either way) the
// renewals are still paced by the lock: read as already past (a clock ahead of the broker's), a pass of about 10 s
// renews a handful of times, not in a loop; read as 10 min ahead (a clock behind), the lock is still renewed before
// the broker's 5 s lock lapses, and the pass completes its trigger.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { eventually, withHarness } from './harness.ts';
import type { Harness } from './harness.ts';
import { aroundSends, parkAndTrigger, replayProcessor, skewTriggerLocks } from './replayHarness.ts';
import { MIN_GRANTED_LOCK_MS } from '../src/lockRenewalDelay.ts';

const SESSION = 'LOCK-1';
/** Twice the harness subscriptions' lock duration (PT5S): the trigger's lock must be renewed during the pass. */
const SLOW_SEND_MS = 10_000;

/**
 * A pass of SESSION's 2 parked messages whose first copy's send is held SLOW_SEND_MS, on a client of its own (read
 * through `prepare` before the processor starts); asserts the pass replayed both and kept its trigger. Returns how
 * long the processor ran (ms), from its start to its stop after the pass.
 */
async function slowPassKeepsTrigger(
  h: Harness,
  prepare: (client: ReturnType<typeof createServiceBusClients>['client']) => void = () => undefined,
): Promise<number> {
  const own = createServiceBusClients(h.emulator.connectionString);
  // The processor's first replayed copy is sent only after the trigger's original lock has run out.
  prepare(own.client);
  let slowed = false;
  aroundSends(own.client, async (_entityPath, send) => {
    if (!slowed) {
      slowed = true;
      await new Promise((r) => setTimeout(r, SLOW_SEND_MS));
    }
    return send();
  });
  const { processor, passes } = replayProcessor(own.client);
  const started = Date.now();
  try {
    processor.start();
    await parkAndTrigger(h, SESSION, 2, 'ev-lock');
    await eventually(() => (passes.length > 0 ? true : undefined), 'the pass', 60_000);
    assert.ok(slowed, 'the pass sent a copy');
    assert.deepEqual(passes[0], { sessionId: SESSION, replayed: 2, outcome: 'replayed' });
    assert.equal(
      (await h.deadLetters('crm', 'DeferredProcessor', 10, 300)).length,
      0,
      'the trigger was dead-lettered',
    );
  } finally {
    await processor.stop();
    await own.close();
  }
  return Date.now() - started;
}

test('a replay pass longer than its trigger’s lock completes the trigger and reports the pass replayed', async () => {
  await withHarness(async (h) => void (await slowPassKeepsTrigger(h)));
});

/** How far the skew tests shift the trigger's lock expiry as the processor reads it: far beyond any lock. */
const SKEW_MS = 10 * 60_000;

test('skew: a trigger lock whose expiry reads as already past (a clock ahead of the broker) is renewed a handful of times in a pass, not in a loop', async () => {
  await withHarness(async (h) => {
    let counted: { renewals: number } | undefined;
    const ranMs = await slowPassKeepsTrigger(h, (client) => (counted = skewTriggerLocks(client, -SKEW_MS)));
    // One renewal per half of the shortest lock a broker grants (2.5 s) at most: about 4 over a pass of about
    // SLOW_SEND_MS (a loaded machine makes the timers later, so fewer per second, never more). Before, each renewal
    // was followed by the next at once: hundreds.
    const most = Math.floor(ranMs / (MIN_GRANTED_LOCK_MS / 2)) + 1;
    assert.ok(counted!.renewals >= 1, 'the trigger lock was renewed');
    assert.ok(
      counted!.renewals <= most,
      `${counted!.renewals} renewals of the trigger lock while the processor ran ${ranMs} ms (at most ${most})`,
    );
  });
});

test('skew: a trigger lock whose expiry reads as 10 min ahead (a clock behind the broker) is renewed before the broker’s lock lapses', async () => {
  // Before, it was renewed at half the reading (5 min): the broker's 5 s lock lapsed, completing the trigger failed
  // and the pass was reported failed.
  await withHarness(
    async (h) => void (await slowPassKeepsTrigger(h, (client) => void skewTriggerLocks(client, SKEW_MS))),
  );
});
