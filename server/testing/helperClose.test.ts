// The console tests' wire helpers when a close of theirs never settles (rhea-promise 3.0.3's close met by a dropped
// connection; packages/sdk/e2e/closeDrop.test.ts reproduces it on the wire). drainSession (sessionWire.ts) and
// sendAndDeadLetter (resolverDeadLetter.ts) awaited their sender's and receiver's closes unbounded, so such a close
// hung the helper, and the test file with it until the runner's 20 min file timeout. Now each close is given up at
// HELPER_CLOSE_TIMEOUT_MS (closeBounded.ts). The hang is made by the client's sender and session receiver classes'
// close returning a promise that never settles, once each: the calls the helpers make, on the real client and the
// embedded emulator (stack.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServiceBusClient } from '@azure/service-bus';
import { Topic } from '@nimbus/sdk/contract';
import { HELPER_CLOSE_TIMEOUT_MS } from './closeBounded.ts';
import { sendAndDeadLetter } from './resolverDeadLetter.ts';
import { drainSession } from './sessionWire.ts';
import { startConsoleTestStack, type ConsoleTestStack } from './stack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack | undefined;

before(async () => {
  stack = await startConsoleTestStack('helperclose');
});

after(() => stack?.close());

type Closable = { close(): Promise<void> };

/**
 * Makes the next close of a sender and of a session receiver of `client` never settle (the prototypes of the classes
 * the client makes them of, found by a probe of each). `hung` lists the parts whose close hung; `restore` puts the
 * real closes back and really closes those parts, so nothing is left open behind the test.
 */
async function hangNextCloses(client: ServiceBusClient): Promise<{ hung: Closable[]; restore(): Promise<void> }> {
  const sender = client.createSender(Topic.Resolver);
  const receiver = await client.acceptSession(Topic.Resolver, Topic.Resolver, `probe-${randomUUID()}`);
  const protos = [Object.getPrototypeOf(sender) as Closable, Object.getPrototypeOf(receiver) as Closable];
  await sender.close();
  await receiver.close();
  const hung: Closable[] = [];
  const reals = protos.map((proto) => {
    const real = Object.getOwnPropertyDescriptor(proto, 'close')!;
    let hangs = 1;
    Object.defineProperty(proto, 'close', {
      ...real,
      value: function (this: Closable) {
        if (hangs-- > 0) {
          hung.push(this);
          return new Promise<void>(() => undefined);
        }
        return (real.value as () => Promise<void>).call(this);
      },
    });
    return { proto, real };
  });
  return {
    hung,
    async restore() {
      for (const { proto, real } of reals) Object.defineProperty(proto, 'close', real);
      for (const part of hung) await part.close().catch(() => undefined);
    },
  };
}

/** 'returned' when `call` ends, 'hung' when it has not 20 s past the two bounds its closes may take. */
async function returnsPastBounds(call: Promise<unknown>): Promise<'returned' | 'hung'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      call.then(() => 'returned' as const),
      // Generous over the bounds on a loaded machine; only a helper that never returns reaches it.
      new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), 2 * HELPER_CLOSE_TIMEOUT_MS + 20_000))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("the console tests' wire helpers when a close never settles", () => {
  test('drainSession returns, its sender and receiver closes given up at the bound', async () => {
    const client = stack!.serviceBus.client;
    const hang = await hangNextCloses(client);
    try {
      const drained = drainSession(client, 'crmendpoint', `S-${randomUUID().slice(0, 8)}`);
      assert.equal(await returnsPastBounds(drained), 'returned', 'drainSession had not returned 20 s past the bounds');
      assert.deepEqual(await drained, [], 'only its own end marker was in the session');
      assert.equal(hang.hung.length, 2, 'the helper closed its sender and its receiver');
    } finally {
      await hang.restore();
    }
  });

  test('sendAndDeadLetter returns, its sender and receiver closes given up at the bound', async () => {
    const client = stack!.serviceBus.client;
    const hang = await hangNextCloses(client);
    try {
      const sessionId = `S-${randomUUID().slice(0, 8)}`;
      const dead = sendAndDeadLetter(
        client,
        { messageId: randomUUID(), sessionId, body: 'a message the Resolver could not record' },
        { deadLetterReason: 'Seeded', deadLetterErrorDescription: 'seeded' },
      );
      assert.equal(await returnsPastBounds(dead), 'returned', 'sendAndDeadLetter had not returned 20 s past the bounds');
      assert.equal(hang.hung.length, 2, 'the helper closed its sender and its receiver');
    } finally {
      await hang.restore();
    }
  });
});
