// A guard: once the host's session receiver is closed, its session lock is not renewed any more. Why it matters:
// @azure/service-bus 7.9.5 keeps renewing the message locks of a non-session receiver closed while its connection was
// down (the deferred processor renews its trigger lock itself for that reason), and a lock renewed by a receiver
// nobody uses keeps its messages from anyone else for the client's whole renewal window (5 min by default). Session
// receivers clear their renewal timer in close and are closed by the client when their connection drops; this test
// keeps it that way (a client upgrade, or a host that stops closing its receivers, fails it), after a connection reset
// and after stop(), on both session connections.
//
// Counted at the broker: every renew-session-lock that reaches the emulator. The clock is a session receiver of the
// test's own, renewing its lock at the same cadence: a few of its renewals after the close, and none of the closed
// receiver's, is a positive signal that several renewal periods passed without one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endProcessAfterResults, eventually, withHarness } from './harness.ts';
import { startProxiedHost } from './proxiedHost.ts';

endProcessAfterResults(); // a reset connection leaves timers and socket requests behind (harness.ts)

const LOCK_MS = 2000; // renewed every second
type Broker = { renewSessionLock(source: unknown, sessionId: string): number };

for (const sessionConnection of ['dedicated', 'shared'] as const) {
  test(`${sessionConnection} session connection: a closed session receiver renews no lock, after a reset and after stop()`, async () => {
    await withHarness(async (h) => {
      const sub = await h.clients.admin.getSubscription('crm', 'crm');
      await h.clients.admin.updateSubscription({ ...sub, lockDuration: `PT${LOCK_MS / 1000}S` });
      const renewals: Array<{ sessionId: string; n: number }> = [];
      const broker = h.emulator.broker as unknown as Broker;
      const renew = broker.renewSessionLock.bind(broker);
      broker.renewSessionLock = (source, sessionId) => {
        renewals.push({ sessionId, n: renewals.length });
        return renew(source, sessionId);
      };
      const count = (sessionId: string, after = -1) =>
        renewals.filter((r) => r.sessionId === sessionId && r.n > after).length;
      /** Waits until the clock session has been renewed three more times, then counts `sessionId`'s renewals since. */
      const renewalsOverThreePeriods = async (sessionId: string) => {
        const from = renewals.length - 1;
        await eventually(() => (count('CLOCK', from) >= 3 ? true : undefined), 'three renewals of the clock', 30_000);
        return count(sessionId, from);
      };
      const clock = await h.client.acceptSession('crm', 'crm', 'CLOCK');

      const proxied = await startProxiedHost(h, {
        sessionConnection,
        maxConcurrentSessions: 2,
        // The session stays held (and renewed) until the reset or the stop closes its receiver.
        sessionIdleTimeoutMs: 60_000,
      });
      const { proxy, host, handled, publisher } = proxied;
      try {
        await host.start();
        // After a reset: the client closes the session's receiver. The session has no message left, so nobody takes
        // it again: any renewal of it afterwards comes from the closed receiver.
        await publisher.publish('CustomerUpdated', { customerId: 'G-1' });
        await eventually(() => (count('G-1') >= 2 ? true : undefined), 'G-1 held and renewed', 30_000);
        await proxy.cut();
        await proxy.restore();
        assert.equal(await renewalsOverThreePeriods('G-1'), 0, 'G-1 renewed after its receiver was reset');

        // After stop(): the host closes its receivers.
        await publisher.publish('CustomerUpdated', { customerId: 'G-2' });
        await eventually(() => (count('G-2') >= 2 ? true : undefined), 'G-2 held and renewed', 30_000);
        await host.stop();
        assert.equal(await renewalsOverThreePeriods('G-2'), 0, 'G-2 renewed after stop()');
        assert.deepEqual(handled, ['G-1', 'G-2']);
      } finally {
        await host.stop();
        await clock.close();
        await proxied.close();
      }
    });
  });
}
