// stop() when the host's broker connection has gone silent (no RST: the path died, the client has not noticed) while
// its worker waits in acceptNextSession, on the default dedicated session connection and with `shared`. Measured
// before stop() bounded its waits: on the dedicated connection the pending accept came back only after ~60 s
// (whatever acceptWaitMs says), then closing the sender hung for more than 30 s, and stop() had not returned after
// 90 s; with `shared` the sender's close hung the same way. A connection reset (sessionDrop.test.ts) never shows
// this: the client learns of an RST at once.
//
// The host reaches the emulator through a TCP fault proxy (server/testing/tcpFaultProxy.ts) with the unmodified
// client; the test's own publisher connects directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endProcessAfterResults, eventually, stopsWithin, withHarness } from './harness.ts';
import { startProxiedHost } from './proxiedHost.ts';

endProcessAfterResults(); // what was given up on a silent connection leaves timers and sockets behind (harness.ts)

/** The operation bound the host is given here: stop() waits at most about this long per step it bounds. */
const OPERATION_TIMEOUT_MS = 5_000;
/** Well above the bounded steps (3 × the bound), well below what stop() took before (> 90 s). */
const STOP_WITHIN_MS = 45_000;

type Broker = { openReceiver(opts: { session?: { sessionId: string | null } }): Promise<unknown> };

for (const sessionConnection of ['dedicated', 'shared'] as const) {
  test(`${sessionConnection} session connection gone silent while an accept waits: stop() returns`, async () => {
    await withHarness(async (h) => {
      // Accepts of the next session that reached the broker: the positive signal that the worker waits in one.
      const broker = h.emulator.broker as unknown as Broker;
      const openReceiver = broker.openReceiver.bind(broker);
      let acceptsWaiting = 0;
      broker.openReceiver = (opts) => {
        if (opts.session?.sessionId === null) acceptsWaiting++;
        return openReceiver(opts);
      };
      const proxied = await startProxiedHost(h, {
        sessionConnection,
        maxConcurrentSessions: 1,
        sessionIdleTimeoutMs: 500,
        operationTimeoutMs: OPERATION_TIMEOUT_MS,
      });
      const { proxy, host, handled, publisher } = proxied;
      let stopped: 'stopped' | 'hung' = 'hung';
      try {
        await host.start();
        // One delivery first, so the host's sender (whose close stop() also waits for) has its link open.
        await publisher.publish('CustomerUpdated', { customerId: 'S-1' });
        await eventually(() => (handled.length === 1 ? true : undefined), 'the first message handled', 20_000);
        // The session is released when idle and the worker asks for the next one: that accept reaches the broker.
        const before = acceptsWaiting;
        await eventually(() => (acceptsWaiting > before ? true : undefined), 'an accept waiting on the broker', 20_000);
        proxy.silence();
        stopped = await stopsWithin(() => host.stop(), STOP_WITHIN_MS);
      } finally {
        // Does not wait for the proxied client's close: it has the sender's close given up by stop() pending on the
        // silent connection, and its own close waits for that (the file's process is ended after its results instead).
        await proxied.close();
      }
      assert.equal(stopped, 'stopped', `stop() did not return within ${STOP_WITHIN_MS} ms`);
    });
  });
}
