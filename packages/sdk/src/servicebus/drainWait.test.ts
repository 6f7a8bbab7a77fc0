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

