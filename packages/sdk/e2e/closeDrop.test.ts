// A close that is waiting for the broker's answer when the connection drops. In rhea-promise 3.0.3 (under
// @azure/service-bus 7.9) such a close never settles: its `disconnected` handler clears the operation timer and neither
// resolves nor rejects. Measured before the SDK bounded its closes (servicebus/boundedClose.ts): a publisher's, a
// handoff client's and the clients' close() still pending when this file gave up on them, 30 s after the drop (and a
// bare sender's 75 s after it, past rhea's own 60 s operation timeout, which ends the same close when the
// connection stays up). A broker restart during a rolling stop meets a host's close this way.
//
// The part's connection runs through a TCP fault proxy (server/testing/tcpFaultProxy.ts) with the unmodified client:
// silenced, the proxy holds the client's detach unanswered (the bytes it holds are the signal that the close is on
// the wire), then cut, it resets the connection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceBusClient } from '@azure/service-bus';
import { pino } from 'pino';
import { HandlerRegistry, HandoffClient, Publisher, SubscriberHost, sessionKeysFromCatalog } from '@nimbus/sdk';
import type { CloseLogger } from '@nimbus/sdk/servicebus';
import type { TcpFaultProxy } from '../../../server/testing/tcpFaultProxy.ts';
import { endProcessAfterResults, eventually, withHarness } from './harness.ts';
import { proxiedClients } from './replayHarness.ts';

endProcessAfterResults(); // a close abandoned, and the client's reconnects after the reset, leave timers behind

/** The bound the parts are given here. */
const CLOSE_TIMEOUT_MS = 2_000;
/** Generous over the bound (a loaded 2-core machine); a close that has not settled by then is taken as hung. */
const SETTLES_WITHIN_MS = 30_000;
/** An AMQP empty frame (a heartbeat): held bytes beyond one are the close's detach, not the client's keep-alive. */
const EMPTY_FRAME_BYTES = 8;

function warnings(): { lines: string[]; logger: CloseLogger } {
  const lines: string[] = [];
  return { lines, logger: { warn: (_details, message) => lines.push(message) } };
}

/**
 * Silences the proxy, starts `close`, waits until the proxy holds its detach, then cuts the connection. 'settled'
 * when the close then settles (resolves or rejects) within SETTLES_WITHIN_MS, else 'pending'.
 */
async function closeMeetsDrop(proxy: TcpFaultProxy, close: () => Promise<unknown>): Promise<'settled' | 'pending'> {
  proxy.silence();
  const before = proxy.silencedBytes;
  const closing = close();
  await cutOnceHeld(proxy, before);
  return settlesWithin(closing);
}

/** Waits until the silenced proxy holds more than a heartbeat beyond `before` (the detach), then resets it. */
async function cutOnceHeld(proxy: TcpFaultProxy, before: number): Promise<void> {
  await eventually(
    () => (proxy.silencedBytes > before + EMPTY_FRAME_BYTES ? true : undefined),
    'the close on the wire, unanswered',
    20_000,
  );
  await proxy.cut();
}

async function settlesWithin(work: Promise<unknown>): Promise<'settled' | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work.then(
        () => 'settled' as const,
        () => 'settled' as const,
      ),
      new Promise<'pending'>((r) => (timer = setTimeout(() => r('pending'), SETTLES_WITHIN_MS))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

test("a publisher's close that meets a dropped connection ends at its bound, with a warning", async () => {
  await withHarness(async (h) => {
    const { proxy, clients } = await proxiedClients(h);
    const { lines, logger } = warnings();
    try {
      const publisher = new Publisher({
        client: clients.client,
        endpointId: 'shop',
        sessionKeys: sessionKeysFromCatalog(h.catalog),
        closeTimeoutMs: CLOSE_TIMEOUT_MS,
        logger,
      });
      // The sender's link is attached through the proxy.
      await publisher.publish('CustomerUpdated', { customerId: 'C-1' });
      const outcome = await closeMeetsDrop(proxy, () => publisher.close());
      assert.equal(outcome, 'settled', `publisher.close() had not settled ${SETTLES_WITHIN_MS} ms after the drop`);
      assert.match(lines.join('\n'), /closing the publisher did not end within 2000 ms .*abandoned/);
    } finally {
      await proxy.close();
      void clients.close().catch(() => undefined);
    }
  });
});

test("a handoff client's close that meets a dropped connection ends at its bound, with a warning", async () => {
  await withHarness(async (h) => {
    const { proxy, clients } = await proxiedClients(h);
    const { lines, logger } = warnings();
    try {
      const handoff = new HandoffClient(clients.client, { closeTimeoutMs: CLOSE_TIMEOUT_MS, logger });
      // A completion nobody waits for: it opens the sender's link to the Manager topic through the proxy.
      await handoff.complete({ endpointId: 'crm', eventId: 'E-1', sessionId: 'S-1', messageId: 'M-1' });
      const outcome = await closeMeetsDrop(proxy, () => handoff.close());
      assert.equal(outcome, 'settled', `handoff.close() had not settled ${SETTLES_WITHIN_MS} ms after the drop`);
      assert.match(lines.join('\n'), /closing the handoff client did not end within 2000 ms .*abandoned/);
    } finally {
      await proxy.close();
      void clients.close().catch(() => undefined);
    }
  });
});

test("the clients' close that meets a dropped connection ends at its bound, with a warning", async () => {
  await withHarness(async (h) => {
    const { lines, logger } = warnings();
    const { proxy, clients } = await proxiedClients(h, { closeTimeoutMs: CLOSE_TIMEOUT_MS, logger });
    try {
      const sender = clients.client.createSender('shop');
      await sender.sendMessages({ body: 'opens the link', sessionId: 'S-1' });
      // The client's close closes that link first, and waits for the broker's answer to its detach.
      const outcome = await closeMeetsDrop(proxy, () => clients.close());
      assert.equal(outcome, 'settled', `clients.close() had not settled ${SETTLES_WITHIN_MS} ms after the drop`);
      assert.match(lines.join('\n'), /closing the Service Bus client did not end within 2000 ms .*abandoned/);
    } finally {
      await proxy.close();
    }
  });
});

test("a host's start: the subscription check's connection close that meets a dropped connection ends at the host's bound", async () => {
  await withHarness(async (h) => {
    const { proxy, clients } = await proxiedClients(h);
    // The host's own logger (pino), its warnings kept as JSON lines.
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    // start() checks the subscriptions on a connection of its own (the probe) and closes it: the first client close
    // during start() is the probe's, with its management link open. That close starts on a silenced connection.
    const proto = ServiceBusClient.prototype;
    const realClose = Object.getOwnPropertyDescriptor(proto, 'close')!;
    let probeClosing!: (heldBefore: number) => void;
    const closing = new Promise<number>((r) => (probeClosing = r));
    let closes = 0;
    Object.defineProperty(proto, 'close', {
      ...realClose,
      value: function (this: ServiceBusClient) {
        if (++closes === 1) {
          proxy.silence();
          probeClosing(proxy.silencedBytes);
        }
        return (realClose.value as () => Promise<void>).call(this);
      },
    });
    const host = new SubscriberHost({
      client: clients.client,
      endpointId: 'crm',
      handlers: new HandlerRegistry(),
      deferredProcessor: false,
      operationTimeoutMs: CLOSE_TIMEOUT_MS,
      logger,
    });
    try {
      const starting = host.start();
      await cutOnceHeld(proxy, await closing);
      const outcome = await settlesWithin(starting);
      assert.equal(outcome, 'settled', `host.start() had not settled ${SETTLES_WITHIN_MS} ms after the drop`);
      await starting; // the subscriptions exist: the host started
      assert.match(lines.join('\n'), /closing the subscription check connection did not end within 2000 ms .*abandoned/);
    } finally {
      Object.defineProperty(proto, 'close', realClose);
      await proxy.close();
      void host.stop().catch(() => undefined);
      void clients.close().catch(() => undefined);
    }
  });
});
