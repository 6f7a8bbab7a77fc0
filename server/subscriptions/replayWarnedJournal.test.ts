// Warned dead letters (`replayWarning`: a refused Manager command) that the replay journal already knows, through the
// console's route handlers on the embedded emulator and Cosmos store with the real clients:
// - one whose copy the journal records as sent: a replay by filter removes it without sending, as it removes an
//   un-warned already-sent one (the warning is about a send; its copy is out). Before, the warning was checked first
//   and it was skipped, left in the queue;
// - the preview's counts of warned ones leave out those that are not sent: `warnedToSend` counts only the warned
//   ones a replay with `includeWarned` sends (not the uncertain ones), and an already-sent one is counted as already
//   sent, not warned; the confirm button's "Replay N, including M likely refused again" (replayConfirmLabel) says M
//   from it. Before, M was every warned one selected, uncertain and already-sent ones included.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, MessageType, Prop, WireText } from '@nimbus/sdk/contract';
import { replayConfirmLabel } from '../../components/topology/withoutWarned.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import type { DeadLetterView } from './deadLetters.ts';
import { ReplayJournal } from './replayJournal.ts';
import { refusedCommand, type DeadLetterSeed } from './testing/mainDeadLetters.ts';
import { keyOf, replayRoutes, uncertain } from './testing/replayRoutes.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'replaywarnedjournal', env: { NIMBUS_RATE_LIMIT_BURST: '1000' } });

const { deadLetter, inQueue, preview, replay, activeOn } = replayRoutes(stack);

/** An event request dead-lettered with the same reason: not a Manager command, so not warned. */
const ordinary = (ep: string): DeadLetterSeed => ({
  message: { messageId: randomUUID(), body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-2' })), applicationProperties: { [Prop.To]: ep, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: `e-${randomUUID()}` } },
  reason: WireText.CommandRefused,
});

/** A replay that sent the copy and died before completing the dead letter (the journal holds `sent`). */
async function alreadySent(journal: ReplayJournal, ep: string, d: DeadLetterView): Promise<void> {
  const claim = await journal.claim(keyOf(ep, d), { operationId: randomUUID(), auditor: 'a replay that died after its send' });
  assert.ok(claim, 'claimed');
  assert.ok(await journal.transition(claim, { state: 'sent', sentAt: new Date().toISOString() }), 'recorded sent');
}

describe('a warned dead letter the replay journal already knows', () => {
  test('its copy recorded as sent: a filter replay removes it without sending, as an un-warned one', async () => {
    const ep = 'shippingendpoint';
    const journal = new ReplayJournal(stack.store.database);
    const [warned, plain] = await deadLetter(ep, [refusedCommand(ep), ordinary(ep)]);
    assert.equal(warned!.replayWarning?.code, 'CommandRefused');
    assert.equal(plain!.replayWarning, null);
    await alreadySent(journal, ep, warned!);
    await alreadySent(journal, ep, plain!);
    const selection = { all: true, reason: WireText.CommandRefused };

    // The preview says what the run does: both only removed, nothing sent, nothing warned of.
    const p = await preview(ep, selection);
    assert.deepEqual(
      { count: p.count, alreadySent: p.alreadySent, warned: p.warned, toSend: p.toSend, warnedToSend: p.warnedToSend },
      { count: 2, alreadySent: 2, warned: 0, toSend: 0, warnedToSend: 0 },
    );

    const before = await activeOn(ep);
    const op = await replay(ep, selection);
    // Before the fix: alreadySent 1, skipped 1, and the warned one stayed in the queue.
    assert.deepEqual(
      { state: op.state, alreadySent: op.alreadySent, replayed: op.replayed, skipped: op.skipped, uncertain: op.uncertain, failed: op.failed },
      { state: 'done', alreadySent: 2, replayed: 0, skipped: 0, uncertain: 0, failed: 0 },
    );
    assert.deepEqual(await inQueue(ep, [warned!.messageId!, plain!.messageId!]), [], 'both removed from the dead-letter queue');
    assert.equal(await activeOn(ep), before, 'no copy sent');
    assert.equal((await journal.get(keyOf(ep, warned!)))?.record.state, 'done');
  });

  test('listed one by one: the preview counts only the warned ones a replay sends, and an already-sent one is only removed', async () => {
    const ep = 'crmendpoint';
    const journal = new ReplayJournal(stack.store.database);
    const [fresh, unsure, sent] = await deadLetter(ep, [refusedCommand(ep), refusedCommand(ep), refusedCommand(ep)]);
    await uncertain(journal, ep, unsure!);
    await alreadySent(journal, ep, sent!);
    const listed = { sequenceNumbers: [fresh!, unsure!, sent!].map((d) => d.sequenceNumber) };

    // Without the opt-in: the two warned ones the warning holds for are named (and left out by the console's
    // confirm); the already-sent one is not warned of, its copy is out. Of the two, one would be sent with the opt-in.
    const without = await preview(ep, listed);
    assert.deepEqual(
      { count: without.count, warned: without.warned, warnedToSend: without.warnedToSend, alreadySent: without.alreadySent, toSend: without.toSend },
      { count: 3, warned: 2, warnedToSend: 1, alreadySent: 1, toSend: 0 },
    );
    assert.deepEqual([...without.warnedSequenceNumbers].sort(), [fresh!.sequenceNumber, unsure!.sequenceNumber].sort());

    // With it: one sent, one removed, one left uncertain; the button says one of the sent is likely refused again.
    const withWarned = await preview(ep, { ...listed, includeWarned: true });
    assert.deepEqual(
      { warned: withWarned.warned, warnedToSend: withWarned.warnedToSend, alreadySent: withWarned.alreadySent, uncertain: withWarned.uncertain, toSend: withWarned.toSend },
      { warned: 2, warnedToSend: 1, alreadySent: 1, uncertain: 1, toSend: 1 },
    );
    // Before the fix: "Replay 1, including 3 likely refused again".
    assert.equal(replayConfirmLabel(withWarned, true), 'Replay 1, including 1 likely refused again');
    assert.equal(replayConfirmLabel(without, false), 'Replay 0');

    // The already-sent one listed alone, without includeWarned: removed, nothing sent (before: 409 replay-warned).
    const before = await activeOn(ep);
    const op = await replay(ep, { sequenceNumbers: [sent!.sequenceNumber] });
    assert.deepEqual({ alreadySent: op.alreadySent, replayed: op.replayed, skipped: op.skipped }, { alreadySent: 1, replayed: 0, skipped: 0 });
    assert.deepEqual((await inQueue(ep, [fresh!.messageId!, unsure!.messageId!, sent!.messageId!])).map((d) => d.sequenceNumber), [fresh!.sequenceNumber, unsure!.sequenceNumber]);
    assert.equal(await activeOn(ep), before, 'no copy sent');
  });
});
