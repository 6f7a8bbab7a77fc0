// A parked message above a replay pass's bound is left for a later pass untouched: passes that do not replay it
// must not spend its delivery count. Before, each such pass received it and abandoned it, and after
// maxDeliveryCount (10) passes the broker dead-lettered it from {E}/Deferred: the pass that should have replayed
// it found nothing and the main handler skipped its sequence as a ReplayGap, leaving its row Deferred for good
// (seen under load in e2e/scale-out.test.ts, where a long-draining session gets many passes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, MessageType } from '@nimbus/sdk/contract';
import type { ReplayPass } from '@nimbus/sdk';
import { eventually, withHarness } from './harness.ts';

test('passes below a parked sequence leave it parked (no delivery spent); the pass that reaches it replays it', async () => {
  await withHarness(async (h) => {
    const passes: ReplayPass[] = [];
    h.deferredProcessor('crm', { onPass: (p) => void passes.push(p) });
    await h.send('crm', {
      sessionId: 'RB-1',
      body: eventBody('CustomerUpdated', {}),
      props: { To: 'Deferred', MessageType: MessageType.EventRequest, EventId: 'ev-rb', EventTypeId: 'CustomerUpdated', DeferralSequence: 50, OriginalSessionId: 'RB-1' },
    });
    // More passes than the subscription's maxDeliveryCount (10), each bounded below the parked sequence.
    for (let until = 1; until <= 12; until++) {
      await h.send('crm', {
        sessionId: 'RB-1',
        props: { To: 'DeferredProcessor', MessageType: MessageType.ProcessDeferredRequest, EventId: `ev-t${until}`, ReplayUntil: until },
      });
      await eventually(() => (passes.length === until ? true : undefined), `pass ${until}`, 30_000);
    }
    assert.deepEqual(passes.map((p) => [p.outcome, p.replayed]), Array.from({ length: 12 }, () => ['replayed', 0]));
    assert.equal((await h.deadLetters('crm', 'Deferred', 10, 500)).length, 0, 'the parked message was dead-lettered');
    await h.send('crm', {
      sessionId: 'RB-1',
      props: { To: 'DeferredProcessor', MessageType: MessageType.ProcessDeferredRequest, EventId: 'ev-t51', ReplayUntil: 51 },
    });
    await eventually(() => (passes.length === 13 ? true : undefined), 'the pass up to 51', 30_000);
    assert.deepEqual(passes[12], { sessionId: 'RB-1', replayed: 1, outcome: 'replayed' });
  });
});
