// The test-only disposition hold (startEmulator's testDispositionHold): off unless asked for; when holding, a
// client's completion is neither answered nor applied (the message stays on the queue), and after resume() new
// dispositions are answered again. The real @azure/service-bus client against the emulator.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ServiceBusClient } from '@azure/service-bus';
import { startEmulator } from '../index.ts';

// The held completion's own 60 s timer (and the client's retries of it) would keep this file's process alive for
// minutes after its results: end it once they are in.
after(() => {
  setTimeout(() => process.exit(), 2_000).unref();
});

const eventually = async <T>(probe: () => T | undefined, what: string): Promise<T> => {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('off by default: no hold, and a completion is answered', async () => {
  const emulator = await startEmulator({ port: 0 });
  const client = new ServiceBusClient(emulator.connectionString);
  try {
    assert.equal(emulator.dispositionHold, undefined);
    emulator.broker.createQueue({ name: 'q' });
    await client.createSender('q').sendMessages({ body: 'one' });
    const receiver = client.createReceiver('q');
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    await receiver.completeMessage(m!);
  } finally {
    await client.close();
    await emulator.close();
  }
});

test('holding: a completion is left unanswered and not applied; after resume() the next one is answered', async () => {
  const emulator = await startEmulator({ port: 0, testDispositionHold: true });
  const client = new ServiceBusClient(emulator.connectionString);
  try {
    const hold = emulator.dispositionHold!;
    emulator.broker.createQueue({ name: 'q' });
    const sender = client.createSender('q');
    await sender.sendMessages([{ body: 'held', messageId: 'held' }, { body: 'answered', messageId: 'answered' }]);
    const receiver = client.createReceiver('q');
    const [first] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.equal(first?.messageId, 'held');
    hold.hold();
    let answered = false;
    void receiver.completeMessage(first!).then(
      () => (answered = true),
      () => (answered = true),
    );
    await eventually(() => (hold.held === 1 ? true : undefined), 'the completion held');
    // Not applied: the message is still on the queue (peeked, whatever its lock).
    const peeked = await client.createReceiver('q').peekMessages(10, { fromSequenceNumber: first!.sequenceNumber! });
    assert.deepEqual(peeked.map((p) => p.messageId), ['held', 'answered']);
    assert.equal(answered, false, 'the client is still waiting for its answer');
    hold.resume();
    const [second] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5_000 });
    assert.equal(second?.messageId, 'answered');
    await receiver.completeMessage(second!);
    assert.equal(hold.held, 1);
  } finally {
    void client.close().catch(() => undefined);
    await emulator.close();
  }
});
