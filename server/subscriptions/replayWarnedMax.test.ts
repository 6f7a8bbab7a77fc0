// A replay bounded by `max` sends what its preview said: both count the dead letters it skips as futile (a refused
// Manager command) toward `max`. Before, the preview did and the run did not: 2 skipped ahead of 3, max 3 - the
// preview promised 1 copy and the run sent 3.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, MessageType, Prop, Topic, WireText } from '@nimbus/sdk/contract';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { sendAndDeadLetter } from '../testing/resolverDeadLetter.ts';
import { previewReplay, replayDeadLetters } from './replay.ts';
import { ReplayJournal } from './replayJournal.ts';

let stack: ConsoleTestStack;
let journal: ReplayJournal;
before(async () => {
  stack = await startConsoleTestStack();
  journal = new ReplayJournal(stack.store.database);
});
after(async () => {
  await stack?.close();
});

test('preview toSend equals what a max-bounded replay sends when warned dead letters come first', async () => {
  const c = stack.serviceBus.client;
  for (let i = 0; i < 2; i++) {
    await sendAndDeadLetter(
      c,
      { messageId: randomUUID(), sessionId: `w-${i}`, body: Buffer.from('{}'), applicationProperties: { [Prop.MessageType]: MessageType.SkipRequest, [Prop.EventId]: `e-w-${i}`, [Prop.To]: 'billingendpoint' } },
      { deadLetterReason: WireText.CommandRefused, deadLetterErrorDescription: 'seeded' },
    );
  }
  for (let i = 0; i < 3; i++) {
    await sendAndDeadLetter(
      c,
      { messageId: randomUUID(), sessionId: `n-${i}`, body: Buffer.from(eventBody('OrderPlaced', { orderId: `o-${i}` })), applicationProperties: { [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: `e-n-${i}` } },
      { deadLetterReason: 'Throttled', deadLetterErrorDescription: 'seeded' },
    );
  }
  const sel = { all: true, max: 3 } as const;
  const preview = await previewReplay(c, stack.serviceBus.admin, journal, Topic.Resolver, Topic.Resolver, sel);
  const op = await replayDeadLetters({ client: c, store: stack.store, journal }, { topic: Topic.Resolver, subscription: Topic.Resolver, selection: sel, auditor: 'tester' });
  assert.deepEqual({ toSend: preview.toSend, warned: preview.warned }, { toSend: 1, warned: 2 });
  assert.equal(op.replayed, preview.toSend, `preview said ${preview.toSend} to send; the run replayed ${op.replayed} (skipped ${op.skipped})`);
});
