// A session is never worked on past its lock. The client renews a session lock only until
// maxAutoLockRenewalDurationInMs after the accept; a session with a steady backlog was kept by the host for as long
// as its receives came back full, so past that horizon the lock ran out mid-batch: the deliveries in hand failed
// (lost lock, transient) and the broker delivered them again, each spending one delivery of its budget (the 10th is
// dead-lettered with nothing wrong with it). The host now stops taking messages a margin before the horizon,
// releases the session and accepts it again with a fresh lock and a fresh horizon.
//
// Real emulator, real client. The subscription's lock is shortened to 6 s so that the lock really runs out a little
// after a 12 s horizon, as it would after 5 min in production. With a 3 s lock and a 5 s horizon, the old code lost the
// lock 6-8 s after the accept
// ("settlement step 'complete' failed: The session lock on 'H-1' was lost.", the batch's messages back with a
// delivery spent).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino, type Logger } from 'pino';
import { HandlerRegistry, TransientError } from '@nimbus/sdk';
import type { LifecycleObserver, SubscriberHostOptions } from '@nimbus/sdk';
import type { Harness } from './harness.ts';
import { eventually, withHarness } from './harness.ts';
import { ReceiverImpl } from '../../../emulator/broker/receiver.ts';

// Margins of more than a second (a tenth of the horizon; the lock's remainder after its last renewal on top), so a
// loaded 2-core CI box, where one batch's round trips can take most of a second, does not lose a lock on the new code.
const LOCK_MS = 6_000;
const HORIZON_MS = 12_000;

async function shortLock(h: Harness, lockMs = LOCK_MS): Promise<void> {
  const sub = await h.clients.admin.getSubscription('crm', 'crm');
  await h.clients.admin.updateSubscription({ ...sub, lockDuration: `PT${lockMs / 1000}S` });
}

/** A logger whose lines the test can read (the host's log is its only word on why a session was released). */
function capturingLog(): { logger: Logger; messages: () => string[] } {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  return { logger, messages: () => lines.map((l) => String((JSON.parse(l) as { msg?: unknown }).msg)) };
}

/**
 * Every session lock that ran out at the broker (the emulator closes the holder's link with SessionLockLost), by
 * session. Watched on the real broker's receivers, for the life of the test file.
 */
const lockExpiries: string[] = [];
const closedByBroker = ReceiverImpl.prototype.closedByBroker;
ReceiverImpl.prototype.closedByBroker = function (this: ReceiverImpl, code, message) {
  if (code === 'SessionLockLost') lockExpiries.push(message);
  return closedByBroker.call(this, code, message);
};

/** What the endpoint saw: each delivery's wire count and every failure, by message. */
function deliveries(): {
  observer: LifecycleObserver;
  handledOnce: Set<string>;
  again: string[];
  failed: string[];
} {
  const handledOnce = new Set<string>();
  const again: string[] = [];
  const failed: string[] = [];
  return {
    handledOnce,
    again,
    failed,
    observer: {
      onMessageReceived: (m) => {
        if ((m.deliveryCount ?? 0) > 0) again.push(`${m.messageId}#${m.deliveryCount}`);
      },
      onMessageCompleted: (m) => void handledOnce.add(m.messageId),
      onMessageFailed: (m, e) => void failed.push(`${m.messageId}:${(e as Error)?.name}`),
    },
  };
}

/**
 * A host on crm with one worker and the test's short lock and horizon (overridable), watched: what it delivered, and
 * how many times its log says a session was released at the horizon.
 */
async function watchedHost(
  h: Harness,
  options: Partial<SubscriberHostOptions> & Pick<SubscriberHostOptions, 'handlers'>,
  lockMs = LOCK_MS,
): Promise<{ seen: ReturnType<typeof deliveries>; horizonReleases: () => number }> {
  await shortLock(h, lockMs);
  lockExpiries.length = 0;
  const { logger, messages } = capturingLog();
  const seen = deliveries();
  h.host({
    endpointId: 'crm',
    logger,
    maxConcurrentSessions: 1,
    maxAutoLockRenewalDurationInMs: HORIZON_MS,
    observers: [seen.observer],
    ...options,
  });
  const horizonReleases = () =>
    messages().filter((m) => m.includes('released before its lock-renewal horizon')).length;
  return { seen, horizonReleases };
}

const quickHandler = () => new HandlerRegistry().on('CustomerUpdated', async () => undefined);

describe('the session lock-renewal horizon', () => {
  // Renewal off: the lock's own expiry is the horizon (it runs out after 3 s under the same backlog).
  for (const renewalMs of [HORIZON_MS, 0]) {
    const name = renewalMs > 0 ? `renewal for ${renewalMs / 1000} s` : 'renewal off';
    test(`${name}: a session with a steady backlog is released before its lock horizon and accepted again; no delivery is spent`, async () => {
      await withHarness(async (h) => {
        // Renewal off: the margin is a tenth of the lock; a 15 s lock gives 1.5 s, and still runs out under the backlog
        // on the old code.
        const { seen, horizonReleases } = await watchedHost(
          h,
          { maxAutoLockRenewalDurationInMs: renewalMs, maxMessagesPerReceive: 3, handlers: quickHandler() },
          renewalMs > 0 ? LOCK_MS : 15_000,
        );
        const lockLost = () => seen.again.length > 0 || seen.failed.length > 0 || lockExpiries.length > 0;
        const publisher = h.publisher('shop');
        // The producer keeps a backlog of about fifty messages on the one session, so every receive comes back full and
        // the host never releases the session for want of messages.
        const published: string[] = [];
        let producing = true;
        const producer = (async () => {
          let n = 0;
          while (producing) {
            if (published.length - seen.handledOnce.size >= 50) {
              await new Promise((r) => setTimeout(r, 20));
              continue;
            }
            const batch = await publisher.publishMany(
              Array.from({ length: 10 }, () => ({
                eventTypeId: 'CustomerUpdated',
                payload: { customerId: 'H-1', n: ++n },
              })),
            );
            for (const p of batch) published.push(p.messageId);
          }
        })();
        try {
          // Two releases at the horizon: the session was accepted again after the first and ran to a second horizon.
          const first = await eventually(
            () => (lockLost() ? 'lock lost' : horizonReleases() >= 2 ? 'released twice' : undefined),
            'two releases at the horizon, or a lost lock',
            120_000,
          );
          producing = false;
          await producer;
          // Everything published is handled (a message that came back is handled on its next delivery).
          await eventually(
            () => (published.every((id) => seen.handledOnce.has(id)) ? true : undefined),
            'every published event handled',
            60_000,
          );
          assert.deepEqual(seen.failed, [], 'no delivery failed (the lock never ran out)');
          assert.deepEqual(seen.again, [], 'no message delivered twice');
          assert.deepEqual(lockExpiries, [], 'no session lock ran out');
          assert.equal(first, 'released twice');
        } finally {
          producing = false;
          await producer.catch(() => undefined);
        }
      });
    });
  }

  test('a receive waiting for the next message ends at the horizon: the lock does not run out under it', async () => {
    await withHarness(async (h) => {
      const { seen, horizonReleases } = await watchedHost(h, {
        // The receive after the first message waits for the next one far beyond the horizon.
        sessionIdleTimeoutMs: 60_000,
        handlers: quickHandler(),
      });
      const publisher = h.publisher('shop');
      const first = await publisher.publish('CustomerUpdated', { customerId: 'W-1', n: 1 });
      await eventually(
        () => (seen.handledOnce.has(first.messageId) ? true : undefined),
        'the first event handled',
      );
      // On the old code the lock ran out under the waiting receive (6-8 s after the accept).
      const outcome = await eventually(
        () => (lockExpiries.length > 0 ? 'lock expired' : horizonReleases() > 0 ? 'released' : undefined),
        'a release at the horizon, or a lock run out',
        30_000,
      );
      assert.deepEqual(lockExpiries, [], 'no session lock ran out');
      assert.equal(outcome, 'released');
      // The session is accepted again when its next message comes.
      const second = await publisher.publish('CustomerUpdated', { customerId: 'W-1', n: 2 });
      await eventually(
        () => (seen.handledOnce.has(second.messageId) ? true : undefined),
        'the second event handled',
      );
      assert.deepEqual(seen.failed, []);
      assert.deepEqual(seen.again, []);
      assert.deepEqual(lockExpiries, []);
    });
  });

  test('a hold after a transient outcome ends at the horizon: released while the lock holds, not lost under it', async () => {
    await withHarness(async (h) => {
      let attempts = 0;
      const { seen } = await watchedHost(h, {
        // A hold far longer than the session's horizon (the production defaults: up to 5 min, as the horizon).
        transientHold: { initialMs: 60_000, maxMs: 60_000 },
        handlers: new HandlerRegistry().on('CustomerUpdated', async () => {
          attempts++;
          if (attempts === 1) {
            // Late in the session: the hold begins 6 s after the accept, about 5 s before the horizon (12 s, less 1.2 s).
            await new Promise((r) => setTimeout(r, LOCK_MS));
            throw new TransientError('downstream briefly unavailable');
          }
        }),
      });
      const published = await h.publisher('shop').publish('CustomerUpdated', { customerId: 'T-1', n: 1 });
      // On the old code the worker held the session for the full minute: its lock ran out 5-8 s after the accept,
      // and the message waited for the end of the hold to be delivered again.
      const outcome = await eventually(
        () =>
          lockExpiries.length > 0
            ? 'lock expired'
            : seen.handledOnce.has(published.messageId)
              ? 'redelivered'
              : undefined,
        'the redelivery, or a lock run out',
        70_000,
      );
      assert.deepEqual(lockExpiries, [], 'no session lock ran out');
      assert.equal(outcome, 'redelivered');
      assert.equal(attempts, 2);
      assert.deepEqual(seen.failed, [`${published.messageId}:TransientError`]);
    });
  });
});
