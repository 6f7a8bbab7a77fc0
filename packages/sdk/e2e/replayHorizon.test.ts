// A replay pass never works a parked session past its lock. The client renews the parked session's lock only until
// maxAutoLockRenewalDurationInMs after the accept (60 s by default); a pass that ran longer (many parked messages, a
// slow broker) lost the lock mid-pass: the call in hand failed, the pass was given up and its trigger retried, and
// each parked message received but not yet replayed came back with a delivery spent.
// The processor now stops taking parked messages a margin before the horizon, releases the session with nothing in
// hand and accepts it again with a fresh lock, going on where it stopped, in sequence order, within the same pass.
//
// Real emulator, real client. The Deferred subscription's lock is shortened to 6 s and the processor's horizon to
// 12 s, so that a pass of 50 parked messages, each copy's send slowed to 600 ms (30 s or more), runs well past the
// horizon plus the lock (18 s), as a pass of a few thousand messages would past 60 s in production. Margins of more
// than a second, as lockHorizon.test.ts settled on: the horizon's own (a tenth of it, 1.2 s), a stretch stopping a
// step or more (one copy sent and its parked message completed) before it, and the lock's remainder after its last
// renewal. With a 3 s lock, a 10 s horizon and 400 ms sends (a 1 s margin), a loaded 2-core machine was close to
// losing the lock on the new code. On the old code (before the horizon release) the lock ran out at the broker
// mid-pass ("The session lock on 'HZ-1' expired"): the first pass ended with the lock run out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Prop } from '@nimbus/sdk/contract';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { eventually, withHarness } from './harness.ts';
import { aroundSends, parkAndTrigger, REPLAY_ENDPOINT, replayProcessor } from './replayHarness.ts';
import { ReceiverImpl } from '../../../emulator/broker/receiver.ts';

const SESSION = 'HZ-1';
const PARKED = 50;
const LOCK_MS = 6_000;
const HORIZON_MS = 12_000;
const SEND_DELAY_MS = 600;

/** Every session lock that ran out at the broker (the emulator closes the holder's link with SessionLockLost). */
const lockExpiries: string[] = [];
const closedByBroker = ReceiverImpl.prototype.closedByBroker;
ReceiverImpl.prototype.closedByBroker = function (this: ReceiverImpl, code, message) {
  if (code === 'SessionLockLost') lockExpiries.push(message);
  return closedByBroker.call(this, code, message);
};

test('a replay pass longer than the parked session’s lock horizon releases and re-accepts the session: no lock lost, copies in order, one pass', async () => {
  await withHarness(async (h) => {
    const sub = await h.clients.admin.getSubscription(REPLAY_ENDPOINT, 'Deferred');
    await h.clients.admin.updateSubscription({ ...sub, lockDuration: `PT${LOCK_MS / 1000}S` });
    lockExpiries.length = 0;
    const own = createServiceBusClients(h.emulator.connectionString);
    aroundSends(own.client, async (_entityPath, send) => {
      await new Promise((r) => setTimeout(r, SEND_DELAY_MS));
      return send();
    });
    // Each parked message's delivery count as the processor receives it: 0 unless a lock ran out with it in hand.
    const spent: string[] = [];
    const accept = own.client.acceptSession.bind(own.client);
    own.client.acceptSession = (async (...args: Parameters<typeof accept>) => {
      const parked = await accept(...args);
      const receive = parked.receiveMessages.bind(parked);
      parked.receiveMessages = (async (...receiveArgs: Parameters<typeof receive>) => {
        const got = await receive(...receiveArgs);
        for (const m of got)
          if ((m.deliveryCount ?? 0) > 0) spent.push(`${String(m.messageId)}#${m.deliveryCount}`);
        return got;
      }) as typeof parked.receiveMessages;
      return parked;
    }) as typeof own.client.acceptSession;
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const horizonReleases = () =>
      lines.filter((l) => l.includes('released before its lock-renewal horizon')).length;
    const { processor, passes } = replayProcessor(own.client, {
      logger,
      maxAutoLockRenewalDurationInMs: HORIZON_MS,
    });
    const main = await h.client.acceptSession(REPLAY_ENDPOINT, REPLAY_ENDPOINT, SESSION);
    // What comes back to the main subscription, in arrival order (duplicates kept: a retried pass sends again).
    const arrived: Array<{ sequence: number; passEnd: boolean }> = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        for (const m of await main.receiveMessages(10, { maxWaitTimeInMs: 300 })) {
          arrived.push({
            sequence: Number(m.applicationProperties?.[Prop.ReplaySequence]),
            passEnd: m.applicationProperties?.ReplayPassEnd === true,
          });
          await main.completeMessage(m);
        }
      }
    })();
    try {
      await parkAndTrigger(h, SESSION, PARKED, 'ev-hz');
      processor.start();
      // On the old code the lock ran out under the pass, between the horizon and horizon + lock after the accept.
      const first = await eventually(
        () => (lockExpiries.length > 0 ? 'lock expired' : passes.length > 0 ? 'pass ended' : undefined),
        'the end of the first pass, or a lock run out',
        120_000,
      );
      assert.deepEqual(lockExpiries, [], 'no session lock ran out');
      assert.equal(first, 'pass ended');
      assert.deepEqual(passes, [{ sessionId: SESSION, replayed: PARKED, outcome: 'replayed' }]);
      assert.ok(
        horizonReleases() >= 1,
        'the pass went past its horizon: the session was released and accepted again',
      );
      await eventually(() => (arrived.length >= PARKED ? true : undefined), 'every copy back', 30_000);
      assert.deepEqual(
        arrived.map((a) => a.sequence),
        Array.from({ length: PARKED }, (_, s) => s),
        'each parked message replayed once, in sequence order',
      );
      assert.deepEqual(
        arrived.map((a) => a.passEnd),
        Array.from({ length: PARKED }, (_, s) => s === PARKED - 1),
        'only the last copy ends the pass',
      );
      assert.deepEqual(spent, [], 'no parked message received twice');
      assert.equal(
        (await h.deadLetters(REPLAY_ENDPOINT, 'Deferred', 10, 300)).length,
        0,
        'a parked message was dead-lettered',
      );
    } finally {
      reading = false;
      await reader.catch(() => undefined);
      await processor.stop();
      await main.close().catch(() => undefined);
      await own.close();
    }
  });
});
