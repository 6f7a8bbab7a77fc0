// The console's shutdown when the broker drops the connection while a sender is closing. In rhea-promise 3.0.3 a link
// close waiting for the broker's answer when the connection drops never settles. The heartbeat service's close
// (closeOpsServices) and the Manager's (closeContext) awaited theirs unbounded, and the launcher's shutdown with
// them. Measured before the bounds: neither had returned 45 s after the drop. Now each close is given up at its
// bound (the heartbeat senders' 30 s, the Manager's SEND_TIMEOUT_MS; logged) and the shutdown goes on.
//
// The console's Service Bus connection runs through a TCP fault proxy (server/testing/tcpFaultProxy.ts) with the
// unmodified client: silenced, the proxy holds the sender's detach unanswered (the bytes it holds are the signal that
// the close is on the wire), then cut, it resets the connection. The SDK's own parts: packages/sdk/e2e/closeDrop.test.ts.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { startTcpFaultProxy, type TcpFaultProxy } from '../testing/tcpFaultProxy.ts';
import { endProcessAfterResults } from '../../packages/sdk/e2e/harness.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
endProcessAfterResults(); // a close abandoned, and the client's reconnects after the reset, leave timers behind

/** Above the bounds (15 s, 30 s) by a margin for a loaded 2-core machine; a shutdown still running then hung. */
const SETTLES_WITHIN_MS = 45_000;
/** An AMQP empty frame (a heartbeat): held bytes beyond one are the close's detach, not the client's keep-alive. */
const EMPTY_FRAME_BYTES = 8;

let proxy: TcpFaultProxy | undefined;
useConsoleStack({
  database: 'closedrop',
  seed: true,
  env: async (started) => {
    proxy = await startTcpFaultProxy({ port: started.emulator.port });
    return {
      NIMBUS_SERVICEBUS_CONNECTION_STRING: started.emulator.connectionString.replace(
        `:${started.emulator.port};`,
        `:${proxy.port};`,
      ),
    };
  },
});

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = () => new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' } });

/**
 * Silences the proxy, starts `shutdown`, waits until the proxy holds its close's detach, then resets the connection
 * and restores the proxy. 'settled' when `shutdown` then returns within SETTLES_WITHIN_MS, else 'pending'.
 */
async function shutdownMeetsDrop(shutdown: () => Promise<void>): Promise<'settled' | 'pending'> {
  const p = proxy!;
  p.silence();
  const before = p.silencedBytes;
  const closing = shutdown().then(() => 'settled' as const);
  for (let i = 0; p.silencedBytes <= before + EMPTY_FRAME_BYTES; i++) {
    if (i > 400) throw new Error('the close never reached the wire');
    await new Promise((r) => setTimeout(r, 50));
  }
  await p.cut();
  // Up again for what comes after (the next test's client reconnects); the held close stays given up.
  await p.restore();
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    closing,
    new Promise<'pending'>((r) => (timer = setTimeout(() => r('pending'), SETTLES_WITHIN_MS))),
  ]).finally(() => clearTimeout(timer));
}

describe("the console's shutdown while the broker drops a sender's close", () => {
  test("closeOpsServices returns: the heartbeat senders' closes are given up at their bound", async () => {
    const { getContext } = await import('../context.ts');
    const { getOpsServices, closeOpsServices } = await import('../heartbeat/services.ts');
    // "Send now" opens a heartbeat sender per included endpoint, through the proxy.
    const { count } = await getOpsServices(await getContext()).heartbeat.sendNow('closedrop-test');
    assert.ok(count > 0, 'probes sent');
    const outcome = await shutdownMeetsDrop(closeOpsServices);
    assert.equal(outcome, 'settled', `closeOpsServices() had not returned ${SETTLES_WITHIN_MS} ms after the drop`);
  });

  test("closeContext returns: the Manager sender's close is given up at its bound", async () => {
    const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
    // A command opens the Manager's sender, through the proxy. The client reconnects after the first test's reset on
    // its own; its first attempts may still meet the old, closed connection.
    let first: Response | undefined;
    for (let i = 0; i < 10; i++) {
      first = await skip.POST(post(), params({ endpointId: 'billingendpoint', eventId: 'evt-dead-1' }));
      if (first.status !== 503) break;
    }
    assert.equal(first?.status, 200, await first?.clone().text());
    const { closeContext } = await import('../context.ts');
    const outcome = await shutdownMeetsDrop(closeContext);
    assert.equal(outcome, 'settled', `closeContext() had not returned ${SETTLES_WITHIN_MS} ms after the drop`);
  });
});

after(async () => {
  await proxy?.close();
});
