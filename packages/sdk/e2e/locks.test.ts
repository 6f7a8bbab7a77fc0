// Session locks under a slow handler: with automatic renewal the lock outlives a handler longer than the lock
// duration and the event is handled once; with renewal off the lock is lost, the settlement fails honestly
// (transient, nothing completed) and the broker redelivers the event.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry } from '@nimbus/sdk';
import { MemoryInboxStore } from '@nimbus/sdk';
import type { LifecycleObserver } from '@nimbus/sdk';
import type { Harness } from './harness.ts';
import { eventually, storyOf, withHarness } from './harness.ts';

const LOCK_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A shorter session lock on crm/crm, so a handler can outlive it quickly. */
async function shortLock(h: Harness): Promise<void> {
  const sub = await h.clients.admin.getSubscription('crm', 'crm');
  await h.clients.admin.updateSubscription({ ...sub, lockDuration: `PT${LOCK_MS / 1000}S` });
}

function failures(): { failed: string[]; observer: LifecycleObserver } {
  const failed: string[] = [];
  return {
    failed,
    observer: { onMessageFailed: (m, e) => void failed.push(`${m.messageType}:${(e as Error).name}`) },
  };
}

describe('session locks', () => {
  test('automatic renewal: a handler running past the lock duration completes once', async () => {
    await withHarness(async (h) => {
      await shortLock(h);
      const { failed, observer } = failures();
      let calls = 0;
      h.host({
        endpointId: 'crm',
        observers: [observer],
        handlers: new HandlerRegistry().on('CustomerUpdated', async () => {
          calls++;
          await sleep(LOCK_MS * 2.5);
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'L-1', n: 1 });
      const records = await h.resolver('L-1', 2);
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1'],
        responses: ['ResolutionResponse:E1'],
      });
      assert.deepEqual(await h.resolverRest('L-1', LOCK_MS), [], 'no redelivery, no second response');
      assert.equal(calls, 1);
      assert.deepEqual(failed, []);
    });
  });

  test('renewal off, slow success: the attempt that outlived its lock settles nothing; the redelivery answers once', async () => {
    await withHarness(async (h) => {
      await shortLock(h);
      const { failed, observer } = failures();
      const attempts: number[] = [];
      h.host({
        endpointId: 'crm',
        maxAutoLockRenewalDurationInMs: 0,
        observers: [observer],
        handlers: new HandlerRegistry().on('CustomerUpdated', async () => {
          attempts.push(attempts.length);
          if (attempts.length === 1) await sleep(LOCK_MS * 1.75);
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'L-2', n: 1 });
      // The first attempt outlived its lock: it settles nothing (no response), the redelivery answers once.
      const records = await h.resolver('L-2', 2);
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1'],
        responses: ['ResolutionResponse:E1'],
      });
      assert.equal(attempts.length, 2);
      // The stale attempt ends after the redelivery has answered (the other worker took the session meanwhile).
      await eventually(() => (failed.length > 0 ? true : undefined), 'the stale attempt to end');
      assert.deepEqual(failed, ['EventRequest:TransientError'], 'the lost lock is reported as transient');
      assert.deepEqual(await h.resolverRest('L-2', LOCK_MS * 1.5), []);
      const state = await h.sessionState('crm', 'L-2');
      assert.equal(state.BlockedByEventId ?? null, null);
    });
  });

  test('renewal off, slow success with an inbox: the stale attempt records nothing, so the redelivery runs and answers with a ResolutionResponse', async () => {
    await withHarness(async (h) => {
      await shortLock(h);
      const { failed, observer } = failures();
      const attempts: number[] = [];
      h.host({
        endpointId: 'crm',
        // One worker: the redelivery can only start after the stale attempt has ended (and, without the fix, has
        // recorded the MessageId in the inbox).
        maxConcurrentSessions: 1,
        maxAutoLockRenewalDurationInMs: 0,
        inbox: new MemoryInboxStore(),
        observers: [observer],
        handlers: new HandlerRegistry().on('CustomerUpdated', async () => {
          attempts.push(attempts.length);
          if (attempts.length === 1) await sleep(LOCK_MS * 1.75);
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'L-4', n: 1 });
      const records = await h.resolver('L-4', 2);
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1'],
        responses: ['ResolutionResponse:E1'],
      });
      assert.equal(attempts.length, 2, 'the redelivery ran the handler: the stale success was not recorded');
      assert.deepEqual(failed, ['EventRequest:TransientError'], 'the lost lock is reported as transient');
      assert.deepEqual(await h.resolverRest('L-4', LOCK_MS), []);
    });
  });

  test('renewal off, slow failure: the block is not written without the lock; the redelivery succeeds and the session stays open', async () => {
    await withHarness(async (h) => {
      await shortLock(h);
      const attempts: number[] = [];
      let staleDone = false;
      h.host({
        endpointId: 'crm',
        maxAutoLockRenewalDurationInMs: 0,
        handlers: new HandlerRegistry().on<{ n: number }>('CustomerUpdated', async (e) => {
          attempts.push(e.n);
          if (attempts.length === 1) {
            await sleep(LOCK_MS * 1.75);
            staleDone = true;
            throw new Error('CRM rejected the customer');
          }
        }),
      });
      await h.publisher('shop').publish('CustomerUpdated', { customerId: 'L-3', n: 1 });
      const records = await h.resolver('L-3', 2);
      // The redelivery (taken by the other worker once the lock expired) succeeded; the stale failure that ended
      // later sends nothing, so the Resolver's last word is the outcome that was actually settled.
      assert.deepEqual(storyOf(records), {
        requests: ['EventRequest:E1'],
        responses: ['ResolutionResponse:E1'],
      });
      await eventually(
        () => (attempts.length === 2 && staleDone ? true : undefined),
        'the stale attempt to end',
      );
      assert.deepEqual(await h.resolverRest('L-3', LOCK_MS), [], 'no ErrorResponse from the stale attempt');
      assert.deepEqual(attempts, [1, 1]);
      const state = await h.sessionState('crm', 'L-3');
      assert.equal(state.BlockedByEventId ?? null, null, 'no block left behind by the lost settlement');
    });
  });
});
