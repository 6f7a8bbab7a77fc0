// A session receiver whose drain is answered late keeps its session (real emulator, real @azure/service-bus).
// The late answer is made deterministic rather than timed: right after the client sends the drain, the event loop
// is held busy past the client's 200 ms bound. Node runs due timers before it reads sockets, so the client's drain
// timer fires before the broker's answer is read, exactly what a loaded machine does to it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEmulator } from '../../../../emulator/index.ts';
import { createServiceBusClients, type ServiceBusClients } from './index.ts';
import { tolerateSlowDrain } from './drainWait.ts';

const topic = 'drainwait';
const subscription = 'sessions';
let emulator: Awaited<ReturnType<typeof startEmulator>>;
let clients: ServiceBusClients;

before(async () => {
  emulator = await startEmulator({ port: 0 });
  clients = createServiceBusClients(emulator.connectionString);
  await clients.admin.createTopic(topic);
  await clients.admin.createSubscription(topic, subscription, { requiresSession: true, lockDuration: 'PT30S' });
});

after(async () => {
  await clients?.close();
  await emulator?.close();
});

interface RheaLinkLike {
  drainCredit(): void;
}

/** Holds the event loop busy for `ms` right after each drain `link` sends. */
function answerDrainsLate(link: RheaLinkLike, ms: number): void {
  const drainCredit = link.drainCredit.bind(link);
  link.drainCredit = () => {
    drainCredit();
    const until = Date.now() + ms;
    while (Date.now() < until) {
      // busy: the loop cannot read the broker's answer before the client's drain timer is due
    }
  };
}

test('a session receiver keeps its session when the broker answers a drain after 200 ms', async () => {
  const sender = clients.client.createSender(topic);
  await sender.sendMessages([
    { body: 'one', sessionId: 'S1' },
    { body: 'two', sessionId: 'S1' },
  ]);
  await sender.close();
  const receiver = tolerateSlowDrain(await clients.client.acceptSession(topic, subscription, 'S1'));
  try {
    answerDrainsLate((receiver as unknown as { _messageSession: { link: RheaLinkLike } })._messageSession.link, 400);
    // Asks for more than there is: the receive ends with credit left, so the client drains the link.
    const messages = await receiver.receiveMessages(10, { maxWaitTimeInMs: 1000 });
    assert.equal(messages.length, 2);
    // Without the longer wait the client closed the link at the drain timeout: the session is lost and both
    // completions fail with "The session lock has expired".
    for (const m of messages) await receiver.completeMessage(m);
    await receiver.setSessionState('done');
    assert.equal(String(await receiver.getSessionState()), 'done');
  } finally {
    await receiver.close();
  }
});


// Before, a drain that timed out closed the link from a timer with no catch: when that close failed (the broker had
// detached the link with an error meanwhile - a session lock run out while the answer was late), the rejection was
// unhandled, which ends a process under Node's default, and the receive never answered. Seen once in CI on the
// Resolver's receiver. The close's failure is made deterministic here: the link's close rejects as rhea-promise's does
// when the broker's error detach crosses it.
test("a drain that times out and whose link close fails (the broker's error detach crossing it) answers the receive and leaves no unhandled rejection", async () => {
  const sender = clients.client.createSender(topic);
  await sender.sendMessages([{ body: 'three', sessionId: 'S2' }]);
  await sender.close();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const receiver = tolerateSlowDrain(await clients.client.acceptSession(topic, subscription, 'S2'), 100);
  const link = (receiver as unknown as { _messageSession: { link: RheaLinkLike & { close(o?: unknown): Promise<void> } } })._messageSession.link;
  const close = link.close.bind(link);
  try {
    answerDrainsLate(link, 400);
    let closesRefused = 0;
    link.close = () => {
      closesRefused++;
      return Promise.reject({ condition: 'com.microsoft:session-lock-lost', description: "The session lock on 'S2' expired." });
    };
    let timer: NodeJS.Timeout | undefined;
    const messages = await Promise.race([
      receiver.receiveMessages(10, { maxWaitTimeInMs: 500 }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the receive never answered')), 15_000);
      }),
    ]).finally(() => clearTimeout(timer));
    assert.equal(closesRefused, 1, 'the drain timed out and the client closed the link');
    assert.equal(messages.length, 1, 'the receive answers with what it had');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(unhandled, [], 'no unhandled rejection');
  } finally {
    process.off('unhandledRejection', onUnhandled);
    link.close = close;
    await receiver.close().catch(() => undefined);
  }
});
