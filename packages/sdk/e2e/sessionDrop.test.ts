// A subscriber host whose broker connection is reset while a session worker waits for the session's next message,
// or while a handler runs (so the delivery's settlement meets the reset): the session's later messages must be
// handled within seconds, in order, and stop() must return at once, on the host's default dedicated session
// connection and with `sessionConnection: 'shared'` alike. The caller's client here has @azure/service-bus's default
// 60 s operation timeout, as an adapter's would. A call that a reset leaves unanswered waits that long: before the
// host bounded each broker call of a delivery (operationTimeoutMs), the shared case during a handler failed here:
// the session's next message came 62 s after its publish and stop() took 29 s. What hung (AZURE_LOG_LEVEL=verbose):
// another session's response send, caught opening its link by the reset, held the shared client's reconnect, and
// with it every accept, for the client's 60 s. Now that send is given up after the bound and aborted, which frees
// the reconnect.
//
// The host reaches the emulator through a TCP fault proxy (server/testing/tcpFaultProxy.ts) with the unmodified
// client; the test's own publisher and the emulator's other clients connect directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HandlerRegistry, SubscriberHost } from '@nimbus/sdk';
import { createServiceBusClients } from '@nimbus/sdk/servicebus';
import { startTcpFaultProxy } from '../../../server/testing/tcpFaultProxy.ts';
import { endProcessAfterResults, eventually, stopsWithin, withHarness } from './harness.ts';

endProcessAfterResults(); // a reset connection leaves timers and socket requests behind (harness.ts)

/** Well under the client's 60 s operation timeout, which is what a host that waited for it would take. */
const RECOVERY_MS = 30_000;

const cases = (['dedicated', 'shared'] as const).flatMap((sessionConnection) =>
  (['while the session waits for its next message', 'while a handler runs'] as const).map((when) => ({
    sessionConnection,
    when,
  })),
);

for (const { sessionConnection, when } of cases) {
  test(`${sessionConnection} session connection, a connection reset ${when}: the session's next messages are handled in order within seconds, and stop() returns`, async () => {
    await withHarness(async (h) => {
      const proxy = await startTcpFaultProxy({ port: h.emulator.port });
      const proxied = createServiceBusClients(
        h.emulator.connectionString.replace(`:${h.emulator.port};`, `:${proxy.port};`),
      );
      const duringHandler = when === 'while a handler runs';
      let cut = false;
      // "customerId/n" in the order the handlers ran.
      const handled: string[] = [];
      const handlers = new HandlerRegistry().on<{ customerId: string; n: number }>('CustomerUpdated', async (e) => {
        handled.push(`${e.customerId}/${e.n}`);
        if (duringHandler && !cut) {
          // The reset lands while this delivery is in the handler: its completion meets the reset connection.
          cut = true;
          await proxy.cut();
          await new Promise((r) => setTimeout(r, 1500));
          await proxy.restore();
        }
      });
      const host = new SubscriberHost({
        client: proxied.client,
        endpointId: 'crm',
        handlers,
        sessionConnection,
        maxConcurrentSessions: 2,
        // Long enough that the worker is still waiting on the session's receiver when the connection is reset.
        sessionIdleTimeoutMs: 20_000,
        backoff: { initialMs: 50, maxMs: 500 },
        deferredProcessor: false,
      });
      const publisher = h.publisher('shop');
      let stopped = 'not stopped';
      try {
        await host.start();
        await publisher.publish('CustomerUpdated', { customerId: 'R-1', n: 0 });
        if (!duringHandler) {
          await eventually(() => (handled.length === 1 ? true : undefined), 'the first message handled', 20_000);
          // The worker keeps the session and waits in receiveMessages; the reset finds it there.
          await new Promise((r) => setTimeout(r, 500));
          cut = true;
          await proxy.cut();
          await new Promise((r) => setTimeout(r, 1000));
          await proxy.restore();
        }
        await publisher.publish('CustomerUpdated', { customerId: 'R-1', n: 1 });
        await publisher.publish('CustomerUpdated', { customerId: 'R-2', n: 0 });
        await eventually(
          () => (handled.includes('R-1/1') && handled.includes('R-2/0') ? true : undefined),
          'the messages published after the reset handled',
          RECOVERY_MS,
        ).catch((error: unknown) => {
          throw new Error(`${(error as Error).message} (handled: ${handled.join(', ') || 'nothing'})`);
        });
        assert.ok(cut, 'the connection was reset');
        // In order within the session: R-1/0 (again, when its completion met the reset: at least once) before R-1/1.
        const r1 = handled.filter((x) => x.startsWith('R-1/'));
        assert.equal(r1.at(-1), 'R-1/1', `R-1 handled in order: ${r1.join(', ')}`);
        assert.ok(r1.slice(0, -1).every((x) => x === 'R-1/0'), `R-1 handled in order: ${r1.join(', ')}`);
      } finally {
        stopped = await stopsWithin(() => host.stop(), 15_000);
        await publisher.close().catch(() => undefined);
        await proxied.close().catch(() => undefined);
        await proxy.close();
      }
      assert.equal(stopped, 'stopped', 'the host did not stop within 15 s');
    });
  });
}
