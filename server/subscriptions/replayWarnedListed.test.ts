// Warned dead letters (`replayWarning`: a refused Manager command) that an operator lists one by one, through the
// console's route handlers on the embedded emulator and Cosmos store with the real clients:
// - one that is also uncertain (a replay died with its claim `sending`) is removed as delivered by the console's
//   "Remove as delivered" request (`uncertain: 'markDelivered'`, no includeWarned): nothing is sent, so the warning
//   about a send refused again does not apply. Before, that request was refused 409 `replay-warned`;
// - the warning still holds for what would send: the same request on a warned dead letter that is not uncertain, and a
//   `resend` of a warned uncertain one, are refused 409; the run itself (past the route) leaves a warned one without
//   a claim in the queue under a markDelivered decision;
// - more than 100 warned among the ticked: the preview names every one of them (`warnedSequenceNumbers`, not only
//   the 100 of `warnedItems`), so the console's confirm (withoutWarned) leaves them all out and the replay starts.
//   Before, 101 warned ticked left one in the request and the replay was refused 409.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, MessageType, Prop } from '@nimbus/sdk/contract';
import { withoutWarned } from '../../components/topology/withoutWarned.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { replayDeadLetters } from './replay.ts';
import { ReplayJournal } from './replayJournal.ts';
import { refusedCommand, type DeadLetterSeed } from './testing/mainDeadLetters.ts';
import { keyOf, replayRoutes, uncertain } from './testing/replayRoutes.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'replaywarnedlisted', env: { NIMBUS_RATE_LIMIT_BURST: '1000' } });

const { deadLetter, inQueue, postReplay, finished, preview: previewOf } = replayRoutes(stack);

/** An ordinary event (not warned), as the subscriber leaves one in its dead-letter queue; refusedCommand is a warned one. */
const ordinary = (ep: string): DeadLetterSeed => ({
  message: { messageId: randomUUID(), body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-2' })), applicationProperties: { [Prop.To]: ep, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: `e-${randomUUID()}` } },
  reason: 'MaxDeliveryCountExceeded',
});

describe('a warned dead letter listed one by one', () => {
  test('uncertain too: "Remove as delivered" (markDelivered, no includeWarned) removes it without sending', async () => {
    const ep = 'shippingendpoint';
    const journal = new ReplayJournal(stack.store.database);
    const [d] = await deadLetter(ep, [refusedCommand(ep)]);
    assert.equal(d!.replayWarning?.code, 'CommandRefused');
    await uncertain(journal, ep, d!);

    // The console's request, as DeadLettersView's decide sends it. Before the fix: 409 replay-warned.
    const res = await postReplay(ep, { sequenceNumbers: [d!.sequenceNumber], uncertain: 'markDelivered' });
    assert.equal(res.status, 202, await res.clone().text());
    const op = await finished(((await res.json()) as { operationId: string }).operationId);
    assert.deepEqual(
      { state: op.state, decided: op.decided, replayed: op.replayed, skipped: op.skipped, uncertain: op.uncertain },
      { state: 'done', decided: 1, replayed: 0, skipped: 0, uncertain: 0 },
      'decided on, nothing sent, not skipped',
    );
    assert.deepEqual(await inQueue(ep, [d!.messageId!]), [], 'removed from the dead-letter queue');
    const record = (await journal.get(keyOf(ep, d!)))?.record;
    assert.equal(record?.decision?.kind, 'markDelivered', 'the decision is stamped on its record');
    assert.notEqual(record?.state, 'sending');
  });

  test('the warning still holds for what would send: not uncertain, or a resend', async () => {
    const ep = 'crmendpoint';
    const journal = new ReplayJournal(stack.store.database);
    const [plain, unsure] = await deadLetter(ep, [refusedCommand(ep), refusedCommand(ep)]);
    await uncertain(journal, ep, unsure!);

    // markDelivered names a warned dead letter with no claim: such a request replays it as usual (claims and sends).
    let res = await postReplay(ep, { sequenceNumbers: [plain!.sequenceNumber], uncertain: 'markDelivered' });
    assert.equal(res.status, 409, await res.clone().text());
    let body = (await res.json()) as { code: string; detail: string };
    assert.equal(body.code, 'replay-warned');
    assert.match(body.detail, new RegExp(`^1 of the listed dead letters is not replayed, .*#${plain!.sequenceNumber} `));

    // Both in one markDelivered request: the uncertain one would be allowed, the other is named and refuses the whole.
    res = await postReplay(ep, { sequenceNumbers: [plain!.sequenceNumber, unsure!.sequenceNumber], uncertain: 'markDelivered' });
    assert.equal(res.status, 409, await res.clone().text());
    body = (await res.json()) as { code: string; detail: string };
    assert.match(body.detail, new RegExp(`^1 of the listed dead letters is not replayed, .*#${plain!.sequenceNumber} `));
    assert.doesNotMatch(body.detail, new RegExp(`#${unsure!.sequenceNumber}\\b`));

    // "Resend anyway" on the warned uncertain one sends a copy: refused without includeWarned.
    res = await postReplay(ep, { sequenceNumbers: [unsure!.sequenceNumber], uncertain: 'resend' });
    assert.equal(res.status, 409, await res.clone().text());
    assert.equal(((await res.json()) as { code: string }).code, 'replay-warned');

    // Past the route (a claim released between its check and the run, or a caller of the module): the run removes
    // only an uncertain one without sending; a warned one without a claim is skipped, never claimed or sent.
    const op = await replayDeadLetters(
      { client: stack.serviceBus.client, store: stack.store, journal, receiveWaitMs: 500 },
      { topic: ep, subscription: ep, selection: { sequenceNumbers: [plain!.sequenceNumber], uncertain: 'markDelivered' }, auditor: 'tester' },
    );
    assert.deepEqual({ replayed: op.replayed, decided: op.decided, skipped: op.skipped }, { replayed: 0, decided: 0, skipped: 1 });
    assert.equal(await journal.get(keyOf(ep, plain!)), null, 'no claim written for it');
    assert.deepEqual((await inQueue(ep, [plain!.messageId!, unsure!.messageId!])).map((x) => x.sequenceNumber), [plain!.sequenceNumber, unsure!.sequenceNumber], 'both still in the queue');
    assert.equal((await journal.get(keyOf(ep, unsure!)))?.record.state, 'sending', 'still uncertain');
  });

  test('more than 100 warned ticked: the preview names all of them, and the confirmed replay leaves them out and starts', async () => {
    const ep = 'billingendpoint';
    const WARNED = 105;
    const seeded = await deadLetter(ep, [...Array.from({ length: WARNED }, () => refusedCommand(ep)), ordinary(ep)]);
    const normal = seeded[WARNED]!;
    const selection = { sequenceNumbers: seeded.map((d) => d.sequenceNumber) };

    const preview = await previewOf(ep, selection);
    assert.deepEqual({ count: preview.count, warned: preview.warned, toSend: preview.toSend, listed: preview.warnedItems.length }, { count: WARNED + 1, warned: WARNED, toSend: 1, listed: 100 });
    assert.deepEqual([...(preview.warnedSequenceNumbers ?? [])].sort(), seeded.slice(0, WARNED).map((d) => d.sequenceNumber).sort(), 'every warned one, past the 100 listed');

    // What the console's Replay button sends after this preview. Before the fix: 5 warned left in it, a 409.
    const confirmed = withoutWarned(selection, preview);
    assert.deepEqual(confirmed.sequenceNumbers, [normal.sequenceNumber]);
    const res = await postReplay(ep, confirmed);
    assert.equal(res.status, 202, await res.clone().text());
    const op = await finished(((await res.json()) as { operationId: string }).operationId);
    assert.deepEqual({ state: op.state, replayed: op.replayed, skipped: op.skipped }, { state: 'done', replayed: 1, skipped: 0 });
    assert.equal((await inQueue(ep, seeded.map((d) => d.messageId!))).length, WARNED, 'the warned ones stay in the queue');
  });
});
