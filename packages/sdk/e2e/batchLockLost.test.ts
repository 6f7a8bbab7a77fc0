// A session lock lost under a batch, on a real host and the embedded emulator: the broker takes the lock back at its
// expiry (detaching the receiver's link) and counts a delivery for every message still locked. A later message of
// the batch started then ran its handler - its effects happened - and could not settle, so it came back and ran
// again (a double run). Now the rest of the batch is not started once the lock is known lost; it comes back and runs
// once.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry } from '@nimbus/sdk';
import type { PipelineBehavior } from '@nimbus/sdk';
import { eventually, storyOf, withHarness } from './harness.ts';
import { sendThreeInSession } from './testing/batchSession.ts';

describe('a session lock lost under a batch', () => {
  test('the rest of the batch runs no handler under the lost lock: each event is handled once', async () => {
    await withHarness(async (h) => {
      await sendThreeInSession(h);
      const source = { topic: 'crm', subscription: 'crm' };
      // After ev-1 settled, its delivery goes on until the broker has taken the session lock back (renewal is off, the
      // harness's lock is 5 s): the broker's own answer is the signal, not a sleep.
      let waited = false;
      const outlivesTheLock: PipelineBehavior = async (ctx, next) => {
        await next();
        if (ctx.message.eventId !== 'ev-1' || waited) return;
        waited = true;
        await eventually(
          () => {
            try {
              h.emulator.broker.getSessionState(source, 'S-1');
              return undefined; // still held by the host
            } catch {
              return true; // SessionLockLost: not held (the expiry detached the host's receiver)
            }
          },
          'the session lock to expire at the broker',
          30_000,
        );
      };
      const handled: number[] = [];
      h.host({
        endpointId: 'crm',
        maxConcurrentSessions: 1,
        maxAutoLockRenewalDurationInMs: 0,
        behaviors: [outlivesTheLock],
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', (e) => void handled.push(e.n)),
      });
      const records = await h.resolver('S-1', 6, 40_000);
      assert.deepEqual(storyOf(records).responses, ['ResolutionResponse:E1', 'ResolutionResponse:E2', 'ResolutionResponse:E3']);
      assert.deepEqual(handled, [1, 2, 3], 'each handler ran once: none under the lost lock');
      assert.deepEqual(await h.deadLetters('crm', 'crm', 10, 300), [], 'nothing dead-lettered');
    });
  });
});
