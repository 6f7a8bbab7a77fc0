// Review rv44-a (fixed in replay.ts sendClaimed): the `sent` write's reply is lost after it landed (a reset/timeout: the write is in doubt). persist()
// retries it If-Match the claim's etag, gets 412, transition() answers null, and completeSent is then called with no
// entry: the `done` write is never even attempted. The record stays `sent` for good, and a recreated entity's dead
// letter under the same key within CLOCK_SKEW_MS is removed without a copy - the loss f1b0fbf3 says the retried `done`
// write covers ("The retried done write covers a reuse quicker than the margin").
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { replayDeadLetters, type ReplayOperation } from './replay.ts';
import { ReplayJournal, type JournalEntry, type JournalRecord } from './replayJournal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
before(async () => {
  stack = await startConsoleTestStack('replay-sentdoubt');
});
after(async () => {
  await stack?.close();
});

/** The first `sent` write lands, but its reply is lost (the caller sees an error, as with a connection reset). */
class SentReplyLost extends ReplayJournal {
  lost = 0;
  doneAttempts = 0;
  override async transition(entry: JournalEntry, next: Partial<Omit<JournalRecord, 'id' | 'scope'>>): Promise<JournalEntry | null> {
    if (next.state === 'done') this.doneAttempts++;
    if (next.state === 'sent' && this.lost === 0) {
      this.lost++;
      await super.transition(entry, next); // landed
      throw new Error('replay journal write: socket hang up (injected: reply lost after the write landed)');
    }
    return super.transition(entry, next);
  }
}

async function freshEntity(name: string): Promise<void> {
  const admin = stack.serviceBus.admin;
  if (await admin.topicExists(name)) await admin.deleteTopic(name);
  await admin.createTopic(name);
  await admin.createSubscription(name, name);
}

async function deadLetter(name: string, messageId: string): Promise<string> {
  const sender = stack.serviceBus.client.createSender(name);
  await sender.sendMessages({ messageId, body: Buffer.from('{}') });
  await sender.close();
  const receiver = stack.serviceBus.client.createReceiver(name, name);
  try {
    const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    assert.ok(m);
    await receiver.deadLetterMessage(m, { deadLetterReason: 'ReusedKey', deadLetterErrorDescription: 'seeded' });
    return String(m.sequenceNumber);
  } finally {
    await receiver.close();
  }
}

async function copiesOn(name: string): Promise<ServiceBusReceivedMessage[]> {
  const receiver = stack.serviceBus.client.createReceiver(name, name, { receiveMode: 'receiveAndDelete' });
  try {
    return await receiver.receiveMessages(10, { maxWaitTimeInMs: 500 });
  } finally {
    await receiver.close();
  }
}

const replay = (journal: ReplayJournal, name: string): Promise<ReplayOperation> =>
  replayDeadLetters({ client: stack.serviceBus.client, store: stack.store, journal, receiveWaitMs: 300 }, { topic: name, subscription: name, selection: { all: true }, auditor: 'tester' });
const counts = (op: ReplayOperation) => ({ replayed: op.replayed, alreadySent: op.alreadySent, uncertain: op.uncertain, failed: op.failed });

test('a sent write in doubt that landed: done is still written, and a reused key is not removed unsent', async () => {
  const name = `sentdoubt-${randomUUID().slice(0, 8)}`;
  const messageId = randomUUID();
  await freshEntity(name);
  const seq = await deadLetter(name, messageId);
  const journal = new SentReplyLost(stack.store.database);
  const first = await replay(journal, name);
  assert.deepEqual(counts(first), { replayed: 1, alreadySent: 0, uncertain: 0, failed: 0 });
  assert.equal((await copiesOn(name)).length, 1, 'first copy arrived');
  const key = { topic: name, subscription: name, sequenceNumber: seq, messageId };
  const after1 = (await journal.get(key))?.record.state;
  // The recreated entity reuses the key (as replayReusedKey.test.ts does), a few seconds later.
  await new Promise((r) => setTimeout(r, 20));
  await freshEntity(name);
  assert.equal(await deadLetter(name, messageId), seq, 'the recreated entity reuses the sequence number');
  const second = await replay(new ReplayJournal(stack.store.database), name);
  const copies = (await copiesOn(name)).map((m) => m.messageId);

  assert.equal(journal.doneAttempts > 0 || after1 === 'done', true, `the done write was attempted after the dead letter's completion (record left ${after1}, ${journal.doneAttempts} done attempts)`);
  assert.deepEqual(counts(second), { replayed: 1, alreadySent: 0, uncertain: 0, failed: 0 }, 'the second dead letter is sent, not removed unsent');
  assert.deepEqual(copies, [messageId]);
});
