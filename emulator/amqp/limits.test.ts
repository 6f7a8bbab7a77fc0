// A hostile client cannot make the emulator hold unbounded state: connections, sessions per connection and
// links per session are capped with amqp:resource-limit-exceeded, and one connection's bytes (deliveries it
// leaves unfinished, output it does not read) stay within its budget, while a well-behaved client keeps working.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import rhea, { type Connection } from 'rhea';
import { ServiceBusClient } from '@azure/service-bus';
import { startEmulator, type RunningEmulator } from '../index.ts';
import { putToken } from './test-support.ts';

const require = createRequire(import.meta.url);
// rhea's frame builders, to write transfers that announce `more` and never finish (rhea's sender always finishes).
const frames = require('rhea/lib/frames.js') as {
  transfer(fields: Record<string, unknown>): unknown;
};

const BUDGET = 1024 * 1024;

function connect(port: number): Connection {
  return rhea.create_container().connect({ host: '127.0.0.1', port, reconnect: false });
}

function opened(connection: Connection): Promise<void> {
  return new Promise((resolve, reject) => {
    connection.once('connection_open', () => resolve());
    connection.once('disconnected', () => reject(new Error('disconnected before open')));
  });
}

/** `promise`, or `fallback` after 10 s (so that a missing refusal fails the test instead of hanging it). */
function within<T>(promise: Promise<T>, fallback: T): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((resolve) => setTimeout(() => resolve(fallback), 10_000).unref()),
  ]);
}

/** The condition the emulator closes this connection with ('still open' after 10 s). */
function closedWith(connection: Connection): Promise<string> {
  return within(
    new Promise((resolve) => {
      const done = (): void =>
        resolve(String((connection.error as { condition?: string } | undefined)?.condition ?? 'no error'));
      connection.on('connection_error', () => undefined);
      connection.once('connection_close', done);
      connection.once('disconnected', done);
    }),
    'still open',
  );
}

/** Proof that a well-behaved client is served: a send and a receive with the real client. */
async function roundTrip(emulator: RunningEmulator, topic: string, body: string): Promise<void> {
  const client = new ServiceBusClient(emulator.connectionString, {
    retryOptions: { maxRetries: 0, timeoutInMs: 10_000 },
  });
  try {
    await client.createSender(topic).sendMessages({ body });
    const receiver = client.createReceiver(topic, 'ok', { receiveMode: 'receiveAndDelete' });
    const got = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.equal(got[0]?.body, body);
  } finally {
    await client.close();
  }
}

describe('caps on what one client holds', () => {
  let emulator: RunningEmulator;
  before(async () => {
    emulator = await startEmulator({
      port: 0,
      limits: {
        maxConnections: 4,
        maxSessionsPerConnection: 3,
        maxLinksPerSession: 2,
        connectionBudgetBytes: BUDGET,
      },
    });
    for (const topic of ['budget', 'slow']) {
      emulator.broker.createTopic({ name: topic });
      emulator.broker.createSubscription({ topicName: topic, subscriptionName: 'ok' });
    }
    emulator.broker.createSubscription({ topicName: 'slow', subscriptionName: 'unread' });
  });
  after(async () => {
    await emulator.close();
  });

  test('connections beyond the cap are closed with resource-limit-exceeded; freed slots are usable again', async () => {
    const held = [
      connect(emulator.port),
      connect(emulator.port),
      connect(emulator.port),
      connect(emulator.port),
    ];
    await Promise.all(held.map(opened));
    const extra = connect(emulator.port);
    assert.equal(await closedWith(extra), 'amqp:resource-limit-exceeded');
    held.pop()!.close();
    await new Promise((r) => setTimeout(r, 100));
    const again = connect(emulator.port);
    await opened(again);
    again.close();
    for (const c of held) c.close();
  });

  test('sessions beyond the cap are ended with resource-limit-exceeded', async () => {
    const connection = connect(emulator.port);
    await opened(connection);
    // The emulator answers every begin (AMQP requires it) and ends the one over the cap at once with the error.
    const refused = new Promise<string>((resolve) => {
      for (let i = 0; i < 4; i++) {
        const session = connection.create_session();
        session.on('session_error', () =>
          resolve(String((session.error as { condition?: string } | undefined)?.condition)),
        );
        session.begin();
      }
    });
    assert.equal(await within(refused, 'all four sessions open'), 'amqp:resource-limit-exceeded');
    // The three within the cap still work: a link on each is attached.
    connection.close();
  });

  test('links beyond the cap on one session are refused with resource-limit-exceeded', async () => {
    const connection = connect(emulator.port);
    await opened(connection);
    const session = connection.create_session();
    session.begin();
    const outcomes = await within(
      Promise.all(
        [1, 2, 3].map(
          (i) =>
            new Promise<string>((resolve) => {
              // $cbs needs no rights: the cap is what is tested.
              const sender = session.open_sender({ name: `l${i}`, target: { address: '$cbs' } });
              sender.once('sendable', () => resolve('open'));
              sender.once('sender_error', () =>
                resolve(String((sender.error as { condition?: string } | undefined)?.condition)),
              );
            }),
        ),
      ),
      ['no answer'],
    );
    assert.deepEqual(outcomes.sort(), ['amqp:resource-limit-exceeded', 'open', 'open']);
    connection.close();
  });

  test('unfinished deliveries past the byte budget close that connection; others are served meanwhile', async () => {
    const hostile = connect(emulator.port);
    await opened(hostile);
    assert.equal((await putToken(hostile, emulator, 'budget')).status, 202);
    const ended = closedWith(hostile);
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, ...(emulator.connectionBytes?.() ?? []), 0)), 2);
    try {
      // Two links (a session each, within the caps), each sending ten 64 KiB frames that announce more:
      // 640 KiB per link is far below the 16 MiB one delivery may reach, 1.25 MiB together is over the budget.
      const chunk = Buffer.alloc(64 * 1024, 0x41);
      for (let l = 0; l < 2 && !hostile.is_closed(); l++) {
        const linkSession = hostile.create_session();
        linkSession.begin();
        const sender = linkSession.open_sender({ target: { address: 'budget' } });
        const ready = new Promise<boolean>((resolve) => sender.once('sendable', () => resolve(true)));
        if (!(await Promise.race([ready, ended.then(() => false)]))) break;
        const session = sender.session as unknown as { output(frame: unknown, payload: Buffer): void };
        const handle = (sender as unknown as { local: { handle: number } }).local.handle;
        for (let f = 0; f < 10 && !hostile.is_closed(); f++) {
          // The first frame opens the delivery; continuations carry only the handle (as rhea's own sender writes them).
          const fields =
            f === 0
              ? { handle, delivery_id: 0, delivery_tag: Buffer.from([l]), message_format: 0, more: true }
              : { handle, more: true };
          session.output(frames.transfer(fields), chunk);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(await ended, 'amqp:resource-limit-exceeded');
      await roundTrip(emulator, 'budget', 'after-hostile');
    } finally {
      clearInterval(sampler);
    }
    assert.ok(peak <= BUDGET, `peak ${peak} bytes held for one connection, budget ${BUDGET}`);
  });

  test('a client that does not read its deliveries holds at most the budget in the emulator', async () => {
    const filler = new ServiceBusClient(emulator.connectionString, {
      retryOptions: { maxRetries: 0, timeoutInMs: 20_000 },
    });
    const body = Buffer.alloc(64 * 1024, 0x42);
    const sender = filler.createSender('slow');
    for (let i = 0; i < 40; i++) await sender.sendMessages(Array.from({ length: 3 }, () => ({ body })));
    await filler.close();

    const hostile = connect(emulator.port);
    await opened(hostile);
    assert.equal((await putToken(hostile, emulator, 'slow/Subscriptions/unread')).status, 202);
    const socket = (hostile as unknown as { socket: { pause(): void } }).socket;
    const receiver = hostile.open_receiver({
      source: { address: 'slow/Subscriptions/unread' },
      credit_window: 0,
    });
    await new Promise<void>((resolve) => receiver.once('receiver_open', () => resolve()));
    receiver.add_credit(1000);
    socket.pause(); // 10 MiB are waiting for it; it reads none of them
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, ...(emulator.connectionBytes?.() ?? []), 0)), 2);
    try {
      await new Promise((r) => setTimeout(r, 1_000));
      await roundTrip(emulator, 'budget', 'while-unread');
    } finally {
      clearInterval(sampler);
      hostile.close();
    }
    // One message past the budget at most (a batch is sized at the largest message, then one always goes).
    assert.ok(peak > 0, 'the emulator held some output for the paused client');
    assert.ok(
      peak <= BUDGET + emulator.broker.maxMessageSizeBytes + 4096,
      `peak ${peak} bytes, budget ${BUDGET}`,
    );
  });
});
