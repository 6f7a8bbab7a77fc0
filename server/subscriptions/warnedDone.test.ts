// Dead letters beside a `done` record of the replay journal, through the console's route handlers on the embedded
// emulator and Cosmos store with the real clients. `done` is written only after its dead letter was completed
// (replay.ts completeSent), so a dead letter still in the queue under the same key (sequence number + MessageId hash)
// is another one: a recreated entity reusing both. It was never replayed, and is judged as one with no record:
// - warned (a refused Manager command): a filter replay skips it and leaves it, as the preview says; before, the run
//   removed it without a copy while the preview said skipped;
// - un-warned: a filter replay claims over the record and sends its copy, as the preview counts it; before, the run
//   removed it unsent (counted already sent) while the preview counted it to send - lost;
// - warned and listed one by one: the warning stands (409), as for one with no record; before, it was accepted and
//   removed unsent.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, MessageType, Prop } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import type { DeadLetterView } from './deadLetters.ts';
import { ReplayJournal, verdictOf } from './replayJournal.ts';
import { refusedCommand, type DeadLetterSeed } from './testing/mainDeadLetters.ts';
import { keyOf, replayRoutes } from './testing/replayRoutes.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'warneddone', env: { NIMBUS_RATE_LIMIT_BURST: '1000' } });

const { deadLetter, inQueue, preview, postReplay, replay, activeOn } = replayRoutes(stack);

/** An ordinary event (not warned), dead-lettered with a reason of this test's own, so a filter replay takes only it. */
const ordinary = (ep: string, reason: string): DeadLetterSeed => ({
  message: { messageId: randomUUID(), body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-2' })), applicationProperties: { [Prop.To]: ep, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: `e-${randomUUID()}` } },
  reason,
});

/** A `done` record under `d`'s key, as a replay of an earlier entity's dead letter with the same key leaves it. */
async function doneBefore(journal: ReplayJournal, ep: string, d: DeadLetterView): Promise<string> {
  const operationId = randomUUID();
  const claim = await journal.claim(keyOf(ep, d), { operationId, auditor: 'an earlier replay' });
  const sent = await journal.transition(claim!, { state: 'sent', sentAt: new Date().toISOString() });
  const done = await journal.transition(sent!, { state: 'done', doneAt: new Date().toISOString() });
  assert.equal(done?.record.state, 'done');
  return operationId;
}

describe('a dead letter beside a `done` record (its key reused: the record is about a dead letter already removed)', () => {
  test('warned: the preview says skipped and left, and the filter replay leaves it, no copy sent', async () => {
    const ep = 'shippingendpoint';
    const journal = new ReplayJournal(stack.store.database);
    const seed = refusedCommand(ep);
    const [warned] = await deadLetter(ep, [seed]);
    assert.equal(warned!.replayWarning?.code, 'CommandRefused');
    await doneBefore(journal, ep, warned!);
    const selection = { all: true, reason: seed.reason };
    const p = await preview(ep, selection);
    assert.deepEqual({ count: p.count, warned: p.warned, alreadySent: p.alreadySent }, { count: 1, warned: 1, alreadySent: 0 });
    const before = await activeOn(ep);
    const op = await replay(ep, selection);
    // Before the fix: alreadySent 1, skipped 0, the dead letter removed without a copy.
    assert.deepEqual({ alreadySent: op.alreadySent, replayed: op.replayed, skipped: op.skipped }, { alreadySent: p.alreadySent, replayed: 0, skipped: 1 });
    assert.equal((await inQueue(ep, [warned!.messageId!])).length, 1, 'left in the queue, as the preview said');
    assert.equal(await activeOn(ep), before, 'no copy sent');
    // The dead-letter page's verdict (routes.ts deadLetters) agrees: not "already sent".
    assert.equal(verdictOf((await journal.get(keyOf(ep, warned!)))?.record), 'none');
  });

  test('un-warned: the filter replay sends its copy, as the preview counts it, and the record is its own', async () => {
    const ep = 'billingendpoint';
    const journal = new ReplayJournal(stack.store.database);
    const reason = `WarnedDone-${randomUUID().slice(0, 8)}`;
    const [plain] = await deadLetter(ep, [ordinary(ep, reason)]);
    assert.equal(plain!.replayWarning, null);
    const earlier = await doneBefore(journal, ep, plain!);
    const selection = { all: true, reason };
    const p = await preview(ep, selection);
    assert.deepEqual({ count: p.count, alreadySent: p.alreadySent, toSend: p.toSend }, { count: 1, alreadySent: 0, toSend: 1 });
    const before = await activeOn(ep);
    const op = await replay(ep, selection);
    // Before the fix: alreadySent 1, replayed 0 - removed without a copy, the message lost.
    assert.deepEqual({ alreadySent: op.alreadySent, replayed: op.replayed, failed: op.failed }, { alreadySent: 0, replayed: 1, failed: 0 });
    assert.deepEqual(await inQueue(ep, [plain!.messageId!]), [], 'removed once its copy is out');
    assert.equal(await activeOn(ep), before + 1, 'its copy is on the subscription');
    const record = (await journal.get(keyOf(ep, plain!)))?.record;
    assert.deepEqual({ state: record?.state, operationId: record?.operationId }, { state: 'done', operationId: op.id });
    assert.notEqual(record?.operationId, earlier);
  });

  test('warned, listed one by one: refused with a 409 as one with no record, nothing removed', async () => {
    const ep = 'crmendpoint';
    const journal = new ReplayJournal(stack.store.database);
    const [warned] = await deadLetter(ep, [refusedCommand(ep)]);
    await doneBefore(journal, ep, warned!);
    const res = await postReplay(ep, { sequenceNumbers: [warned!.sequenceNumber] });
    // Before the fix: 202, and the run removed it without a copy.
    assert.equal(res.status, 409, await res.clone().text());
    assert.equal(((await res.json()) as { code?: string }).code, 'replay-warned');
    assert.equal((await inQueue(ep, [warned!.messageId!])).length, 1, 'still in the queue');
  });
});
