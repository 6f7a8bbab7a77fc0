// What a replay pass does when it releases its parked session at the lock horizon and accepts it again
// (replayHorizon.test.ts has the long pass itself):
//  - a stretch that replays nothing (the horizon already past at the accept) fails the pass, instead of releasing
//    and accepting the session again without end while the trigger is renewed;
//  - another receiver taking the session between the release and the re-accept ends the pass as `session-locked`,
//    the trigger completed, not abandoned to spend a delivery, and a copy of it scheduled: once that receiver lets
//    the session go, the copy's pass replays the rest (before, nobody did when that receiver replayed nothing);
//  - the same on the first accept (another replica's lock lingering after its pass), and the copies stop after
//    MAX_LOCKED_RECHECKS when the session stays held;
//  - a release whose close did not free the lock at the broker (the client's close swallows a failed detach) is not
//    taken for another pass: the re-accept waits for our own lock to run out and the pass replays everything.
//    Before, the trigger was completed as `session-locked` and the rest stayed parked with no trigger;
//  - under clock skew (the lock's expiry shifted as the processor's client reads it) the lock remembered at a release
//    is trusted no further than one default lock from then: read as already past (a clock ahead of the broker's) it
//    is still waited for, and read as 10 min ahead (a clock behind) it is not taken to hold for 10 min.
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
import type { DeferredProcessorOptions, ReplayPass } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { endProcessAfterResults, eventually, withHarness } from './harness.ts';
import type { Harness } from './harness.ts';
import {
  aroundSends,
  parkAndTrigger,
  REPLAY_ENDPOINT,
  replayedSequences,
  replayProcessor,
  skewParkedLocks,
} from './replayHarness.ts';
import { ReceiverImpl } from '../../../emulator/broker/receiver.ts';
import { MAX_LOCKED_RECHECKS } from '../src/lockedRecheck.ts';
import { DEFAULT_LOCK_MS } from '../src/deliveryBudget.ts';

// Receivers closed while their session accept was still opening (the rival's, the lost detach's) leave the client's
// 60 s timers behind: the process sat idle 52 s after its last result (harness.ts explains the exit).
endProcessAfterResults();

const PARKED = 10;
const SEND_DELAY_MS = 300;
/** The processor's renewal horizon when a pass must stop after a few copies (a 300 ms margin, 5 s harness lock). */
const SHORT_HORIZON_MS = 3_000;
/** The re-check delay of a refused trigger: MAX_LOCKED_RECHECKS of them outlast the test's hold on the session. */
const RECHECK_DELAY_MS = 2_000;

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

/** Waits until every parked sequence (0 to PARKED - 1) came back to the main session. */
async function allReplayed(
  main: ServiceBusSessionReceiver,
  passes: readonly ReplayPass[],
  timeoutMs: number,
): Promise<void> {
  const back = await replayedSequences(main, passes, PARKED, timeoutMs);
  assert.deepEqual(
    [...back].sort((a, b) => a - b),
    Array.from({ length: PARKED }, (_, s) => s),
  );
}

/** How far the skew tests shift the parked session's lock expiry as the processor reads it: far beyond any lock. */
const SKEW_MS = 10 * 60_000;

/** The waits for our own released lock that the processor logged (its `waitMs`), in order. */
const ownLockWaits = (lines: readonly string[]) =>
  lines.filter((l) => l.includes('may still hold it')).map((l) => (JSON.parse(l) as { waitMs: number }).waitMs);

const reChecks = (lines: readonly string[]) => lines.filter((l) => l.includes('scheduled to look again')).length;

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

test('another receiver taking the parked session between the release and the re-accept ends the pass as session-locked, its trigger completed and re-checked later', async () => {
  await withHarness(async (h) => {
    const session = 'RA-RIVAL';
    let rival: ServiceBusSessionReceiver | undefined;
    await withProcessor(
      h,
      { maxAutoLockRenewalDurationInMs: SHORT_HORIZON_MS, lockedRecheckDelayMs: RECHECK_DELAY_MS },
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
        const main = await h.client.acceptSession(REPLAY_ENDPOINT, REPLAY_ENDPOINT, session);
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
          // The rival replays nothing: it lets the session go with the rest still parked.
          assert.equal(await parkedLeft(rival), PARKED - pass.replayed, 'the rest is still parked');
          await rival.close();
          rival = undefined;
          // The trigger was completed (an abandoned one would come back at once); the scheduled copy replays the rest.
          await allReplayed(main, passes, 90_000);
          const last = passes.at(-1);
          assert.equal(last?.outcome, 'replayed', `passes: ${passes.map((p) => p.outcome).join(', ')}`);
          assert.equal(
            passes.reduce((n, p) => n + p.replayed, 0),
            PARKED,
            'each parked message replayed once',
          );
          assert.ok(reChecks(lines) >= 1, 'the re-check is logged');
        } finally {
          await rival?.close();
          await main.close().catch(() => undefined);
        }
      },
    );
  });
});

/**
 * A pass whose horizon release's close comes back while the broker keeps the parked session's lock until it runs
 * out (and, with `skewMs`, whose client reads the lock's expiry that far off): the re-accept waits for our own lock
 * and the one pass replays everything.
 */
async function lostDetachReplaysAll(h: Harness, session: string, skewMs = 0): Promise<void> {
  await withProcessor(
    h,
    { maxAutoLockRenewalDurationInMs: SHORT_HORIZON_MS },
    async ({ processor, passes, client, lines }) => {
      slowSends(client);
      if (skewMs !== 0) skewParkedLocks(client, skewMs);
      lostDetach.add(session);
      const main = await h.client.acceptSession(REPLAY_ENDPOINT, REPLAY_ENDPOINT, session);
      try {
        await parkAndTrigger(h, session, PARKED, `ev-${session}`);
        processor.start();
        await eventually(() => (passes.length > 0 ? true : undefined), 'the end of the first pass', 90_000);
        assert.equal(lostDetach.has(session), false, 'the release’s close was lost');
        assert.ok(horizonReleases(lines) >= 1, 'the pass reached its horizon');
        assert.deepEqual(passes[0], { sessionId: session, replayed: PARKED, outcome: 'replayed' });
        await allReplayed(main, passes, 30_000);
        assert.ok(ownLockWaits(lines).length >= 1, 'the wait for our own lock is logged');
      } finally {
        lostDetach.delete(session);
        await main.close().catch(() => undefined);
      }
    },
  );
}

test('a release whose close left our own lock at the broker is not taken for another pass: the re-accept waits for it and the pass replays everything', async () => {
  await withHarness((h) => lostDetachReplaysAll(h, 'RA-LOSTDETACH'));
});

test('a first accept refused by another receiver schedules a re-check: once the session is let go, the copy replays what is parked', async () => {
  await withHarness(async (h) => {
    const session = 'RA-HELD';
    await withProcessor(h, { lockedRecheckDelayMs: RECHECK_DELAY_MS }, async ({ processor, passes, lines }) => {
      const main = await h.client.acceptSession(REPLAY_ENDPOINT, REPLAY_ENDPOINT, session);
      // Another replica's parked receiver whose pass is over, its lock not yet gone.
      let held: ServiceBusSessionReceiver | undefined = await h.client.acceptSession(
        REPLAY_ENDPOINT,
        Subscription.Deferred,
        session,
      );
      try {
        await parkAndTrigger(h, session, PARKED, 'ev-ra-held');
        processor.start();
        await eventually(() => (passes.length > 0 ? true : undefined), 'the end of the first pass', 60_000);
        assert.deepEqual(passes[0], { sessionId: session, replayed: 0, outcome: 'session-locked' });
        await held.close();
        held = undefined;
        await allReplayed(main, passes, 60_000);
        assert.deepEqual(passes.at(-1), { sessionId: session, replayed: PARKED, outcome: 'replayed' });
        assert.ok(reChecks(lines) >= 1, 'the re-check is logged');
      } finally {
        await held?.close();
        await main.close().catch(() => undefined);
      }
    });
  });
});

test('a session held throughout ends the chain of re-checks after MAX_LOCKED_RECHECKS copies', async () => {
  await withHarness(async (h) => {
    const session = 'RA-HELD-LONG';
    await withProcessor(h, { lockedRecheckDelayMs: 200 }, async ({ processor, passes, lines }) => {
      const held = await h.client.acceptSession(REPLAY_ENDPOINT, Subscription.Deferred, session, {
        maxAutoLockRenewalDurationInMs: 300_000,
      });
      try {
        await parkAndTrigger(h, session, 2, 'ev-ra-held-long');
        processor.start();
        // The last pass logs the end of the chain before it completes its trigger and reports: both are waited for.
        await eventually(
          () =>
            lines.some((l) => l.includes('after the last re-check')) && passes.length > MAX_LOCKED_RECHECKS
              ? true
              : undefined,
          'the end of the chain of re-checks',
          60_000,
        );
        assert.equal(passes.length, MAX_LOCKED_RECHECKS + 1, 'the trigger and each of its copies');
        assert.ok(passes.every((p) => p.outcome === 'session-locked'));
        assert.equal(reChecks(lines), MAX_LOCKED_RECHECKS);
        assert.equal(await parkedLeft(held), 2, 'nothing replayed under the hold');
      } finally {
        await held.close();
      }
    });
  });
});

test('skew: a released lock whose expiry reads as already past (a clock ahead of the broker) is still waited for, not taken for another pass', async () => {
  await withHarness((h) => lostDetachReplaysAll(h, 'RA-SKEW-PAST', -SKEW_MS));
});

test('skew: a released lock whose expiry reads as 10 min ahead (a clock behind the broker) is waited for one default lock at most', async () => {
  await withHarness(async (h) => {
    const session = 'RA-SKEW-AHEAD';
    // A bound longer than the default lock, so that the wait shows what the processor took the lock's end to be.
    await withProcessor(
      h,
      { maxAutoLockRenewalDurationInMs: SHORT_HORIZON_MS, operationTimeoutMs: 120_000 },
      async ({ processor, client, lines }) => {
        slowSends(client);
        skewParkedLocks(client, SKEW_MS);
        lostDetach.add(session);
        try {
          await parkAndTrigger(h, session, PARKED, 'ev-ra-skew-ahead');
          processor.start();
          const [waitMs] = await eventually(
            () => (ownLockWaits(lines).length > 0 ? ownLockWaits(lines) : undefined),
            'the re-accept refused by our own lingering lock',
            60_000,
          );
          // Taken at its word, the lock held for the skew: every refusal for 10 min (a rival's too) was taken for
          // our own lock, and each pass waited out the bound and failed, spending a delivery of its trigger.
          assert.ok(
            waitMs! <= DEFAULT_LOCK_MS + 1_000,
            `waits ${waitMs} ms for a lock the broker grants for 5 s ` +
              `(at most a default lock of ${DEFAULT_LOCK_MS} ms, plus 1 s)`,
          );
        } finally {
          lostDetach.delete(session);
          await processor.stop(); // ends the wait
        }
      },
    );
  });
});

test('skew: once the wait for our own released lock has run its course, a refusal is another receiver\'s: the pass ends session-locked, not failed, and its re-check does not wait again', async () => {
  await withHarness(async (h) => {
    const session = 'RA-SKEW-PAST-RIVAL';
    let rival: ServiceBusSessionReceiver | undefined;
    // The default bound (30 s): the lock remembered at the release (one default lock, plus 1 s, read as already past)
    // outlasts the wait by about a second, so the retry's refusal came while it was still remembered.
    await withProcessor(
      h,
      { maxAutoLockRenewalDurationInMs: SHORT_HORIZON_MS, lockedRecheckDelayMs: RECHECK_DELAY_MS },
      async ({ processor, passes, client, lines }) => {
        slowSends(client);
        skewParkedLocks(client, -SKEW_MS);
        lostDetach.add(session);
        const main = await h.client.acceptSession(REPLAY_ENDPOINT, REPLAY_ENDPOINT, session);
        try {
          await parkAndTrigger(h, session, PARKED, 'ev-ra-skew-past-rival');
          processor.start();
          await eventually(
            () => (ownLockWaits(lines).length > 0 ? true : undefined),
            'the re-accept refused by our own lingering lock',
            60_000,
          );
          // Our lingering lock lapses (the harness's 5 s lock) during the wait, and another receiver takes the session.
          rival = await eventually(
            () =>
              h.client
                .acceptSession(REPLAY_ENDPOINT, Subscription.Deferred, session, { maxAutoLockRenewalDurationInMs: 300_000 })
                .catch(() => undefined),
            'the rival taking the session once our lingering lock lapsed',
            30_000,
          );
          assert.equal(passes.length, 0, 'the rival came during the wait for our own lock');
          await eventually(() => (passes.length > 0 ? true : undefined), 'the end of the first pass', 90_000);
          const [pass] = passes;
          // Before, the wait's end left our lock remembered for about a second more: the rival's refusal was taken for
          // our own, the pass failed and its trigger was abandoned, a delivery spent.
          assert.equal(pass?.outcome, 'session-locked', `passes: ${passes.map((p) => p.outcome).join(', ')}`);
          assert.ok(pass.replayed >= 1 && pass.replayed < PARKED, `replayed before the release: ${pass.replayed}`);
          assert.equal(ownLockWaits(lines).length, 1, 'one bounded wait for our own lock');
          // The re-check, refused by the rival still there, is another receiver's at once: the pass's second release
          // of the same parked session (its finally) does not remember our lock again, a default lock on.
          await eventually(() => (passes.length > 1 ? true : undefined), 'the end of the re-check pass', 90_000);
          assert.deepEqual(passes[1], { sessionId: session, replayed: 0, outcome: 'session-locked' });
          assert.equal(ownLockWaits(lines).length, 1, 'the re-check did not wait for our own lock again');
          await rival.close();
          rival = undefined;
          // A later re-check replays the rest.
          await allReplayed(main, passes, 90_000);
          assert.equal(passes.at(-1)?.outcome, 'replayed', `passes: ${passes.map((p) => p.outcome).join(', ')}`);
        } finally {
          lostDetach.delete(session);
          await rival?.close();
          await main.close().catch(() => undefined);
        }
      },
    );
  });
});
