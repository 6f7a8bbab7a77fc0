// What a replay pass does when it releases its parked session at the lock horizon and accepts it again
// (replayHorizon.test.ts has the long pass itself):
//  - a stretch that replays nothing (the horizon already past at the accept) fails the pass, instead of releasing
//    and accepting the session again without end while the trigger is renewed;
//  - another receiver taking the session between the release and the re-accept ends the pass as `session-locked`,
//    the trigger completed (that receiver's pass replays the rest), not abandoned to spend a delivery;
//  - a release whose close did not free the lock at the broker (the client's close swallows a failed detach) is not
//    taken for another pass: the re-accept waits for our own lock to run out and the pass replays everything.
//    Before, the trigger was completed as `session-locked` and the rest stayed parked with no trigger.
//
// Real emulator, real client. The horizon is forced with maxAutoLockRenewalDurationInMs (1 ms: past at the accept;
// 3 s with each copy's send slowed to 300 ms: a stretch of a few messages); the rival is a receiver of the harness's
// own client; the lost detach is the emulator's receiver ignoring the first close of the parked session's receiver.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Long from 'long';
import { pino } from 'pino';
import type { ServiceBusClient, ServiceBusSessionReceiver } from '@azure/service-bus';
import { Subscription } from '@nimbus/sdk/contract';
import type { DeferredProcessorOptions } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { eventually, withHarness } from './harness.ts';
import type { Harness } from './harness.ts';
import {
  aroundSends,
  parkAndTrigger,
  REPLAY_ENDPOINT,
  replayedSequences,
  replayProcessor,
} from './replayHarness.ts';
import { ReceiverImpl } from '../../../emulator/broker/receiver.ts';

const PARKED = 10;
const SEND_DELAY_MS = 300;
/** The processor's renewal horizon when a pass must stop after a few copies (a 300 ms margin, 5 s harness lock). */
const SHORT_HORIZON_MS = 3_000;

/** Sessions whose parked receiver's next close the emulator ignores: the lock stays until it runs out. */
const lostDetach = new Set<string>();
const close = ReceiverImpl.prototype.close;
ReceiverImpl.prototype.close = function (this: ReceiverImpl) {
  const id = this.sessionId;
  if (id !== undefined && this.sub.desc.subscriptionName === Subscription.Deferred && lostDetach.delete(id))
    return;
  return close.call(this);
};

/** A test's processor on a client of its own, its log lines kept (the log is its only word on a release). */
async function withProcessor(
  h: Harness,
  options: Partial<DeferredProcessorOptions>,
  body: (
    p: ReturnType<typeof replayProcessor> & { client: ServiceBusClient; lines: string[] },
  ) => Promise<void>,
): Promise<void> {
  const own = createServiceBusClients(h.emulator.connectionString);
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
  const { processor, passes } = replayProcessor(own.client, { logger, ...options });
  try {
    await body({ processor, passes, client: own.client, lines });
  } finally {
    await processor.stop();
    await own.close();
  }
}

const horizonReleases = (lines: readonly string[]) =>
  lines.filter((l) => l.includes('released before its lock-renewal horizon')).length;

/** Every copy's send slowed, so that a pass of PARKED messages outlasts SHORT_HORIZON_MS. */
function slowSends(client: ServiceBusClient): void {
  aroundSends(client, async (_entityPath, send) => {
    await new Promise((r) => setTimeout(r, SEND_DELAY_MS));
    return send();
  });
}

/** The parked messages left in the session, peeked through `receiver` (which holds it). */
async function parkedLeft(receiver: ServiceBusSessionReceiver): Promise<number> {
  return (await receiver.peekMessages(PARKED + 1, { fromSequenceNumber: Long.ZERO })).length;
}

test('a stretch that replays nothing fails the pass instead of releasing and re-accepting the parked session without end', async () => {
  await withHarness(async (h) => {
    const session = 'RA-NOPROGRESS';
    // A renewal horizon of 1 ms is past at the accept: the first stretch may take no message at all.
    await withProcessor(h, { maxAutoLockRenewalDurationInMs: 1 }, async ({ processor, passes, lines }) => {
      await parkAndTrigger(h, session, 3, 'ev-ra-np');
      processor.start();
      const first = await eventually(
        () => (passes.length > 0 ? 'pass ended' : horizonReleases(lines) >= 10 ? 'looping' : undefined),
        'the end of the first pass, or ten releases of the parked session',
        60_000,
      );
      assert.equal(
        first,
        'pass ended',
        `released and accepted again ${horizonReleases(lines)} times, nothing replayed`,
      );
      assert.deepEqual(passes[0], { sessionId: session, replayed: 0, outcome: 'failed' });
      assert.equal(horizonReleases(lines), 0, 'the session was released and accepted again');
      assert.ok(
        lines.some((l) => l.includes('made no progress')),
        'the failure says why',
      );
      await processor.stop();
      const parked = await h.client.acceptSession(REPLAY_ENDPOINT, Subscription.Deferred, session);
      try {
        assert.equal(await parkedLeft(parked), 3, 'every parked message is still parked');
      } finally {
        await parked.close();
      }
    });
  });
});

test('another receiver taking the parked session between the release and the re-accept ends the pass as session-locked, its trigger completed', async () => {
  await withHarness(async (h) => {
    const session = 'RA-RIVAL';
    let rival: ServiceBusSessionReceiver | undefined;
    await withProcessor(
      h,
      { maxAutoLockRenewalDurationInMs: SHORT_HORIZON_MS },
      async ({ processor, passes, client, lines }) => {
        slowSends(client);
        // The second accept of the parked session is the re-accept after the horizon release: the rival goes first.
        let accepts = 0;
        const accept = client.acceptSession.bind(client);
        client.acceptSession = (async (...args: Parameters<typeof accept>) => {
          if (args[1] === Subscription.Deferred && ++accepts === 2)
            rival = await h.client.acceptSession(REPLAY_ENDPOINT, Subscription.Deferred, session);
          return accept(...args);
        }) as typeof client.acceptSession;
        try {
          await parkAndTrigger(h, session, PARKED, 'ev-ra-rival');
          processor.start();
          await eventually(() => (passes.length > 0 ? true : undefined), 'the end of the first pass', 90_000);
          assert.ok(horizonReleases(lines) >= 1, 'the pass reached its horizon');
          assert.ok(rival, 'the rival took the session');
          const [pass] = passes;
          assert.equal(pass?.outcome, 'session-locked');
          assert.ok(
            pass.replayed >= 1 && pass.replayed < PARKED,
            `replayed before the release: ${pass.replayed}`,
          );
          assert.equal(
            await parkedLeft(rival),
            PARKED - pass.replayed,
            'the rest is parked, for the rival to replay',
          );
          const triggers = h.client.createReceiver(REPLAY_ENDPOINT, Subscription.DeferredProcessor);
          try {
            assert.equal(
              (await triggers.peekMessages(10)).length,
              0,
              'the trigger was completed, not abandoned',
            );
          } finally {
            await triggers.close();
          }
          assert.equal(passes.length, 1, 'no second pass');
        } finally {
          await rival?.close();
        }
      },
    );
  });
});

test('a release whose close left our own lock at the broker is not taken for another pass: the re-accept waits for it and the pass replays everything', async () => {
  await withHarness(async (h) => {
    const session = 'RA-LOSTDETACH';
    await withProcessor(
      h,
      { maxAutoLockRenewalDurationInMs: SHORT_HORIZON_MS },
      async ({ processor, passes, client, lines }) => {
        slowSends(client);
        // The horizon release's close comes back, but the broker keeps the parked session's lock until it runs out.
        lostDetach.add(session);
        const main = await h.client.acceptSession(REPLAY_ENDPOINT, REPLAY_ENDPOINT, session);
        try {
          await parkAndTrigger(h, session, PARKED, 'ev-ra-lost');
          processor.start();
          await eventually(() => (passes.length > 0 ? true : undefined), 'the end of the first pass', 90_000);
          assert.equal(lostDetach.has(session), false, 'the release’s close was lost');
          assert.ok(horizonReleases(lines) >= 1, 'the pass reached its horizon');
          assert.deepEqual(passes[0], { sessionId: session, replayed: PARKED, outcome: 'replayed' });
          const back = await replayedSequences(main, passes, PARKED, 30_000);
          assert.deepEqual(
            [...back].sort((a, b) => a - b),
            Array.from({ length: PARKED }, (_, s) => s),
          );
          assert.ok(
            lines.some((l) => l.includes('may still hold it')),
            'the wait for our own lock is logged',
          );
        } finally {
          lostDetach.delete(session);
          await main.close().catch(() => undefined);
        }
      },
    );
  });
});
