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
import { eventually } from '../../resolver-worker/testHarness.ts';
import { withoutWarned } from '../../components/topology/withoutWarned.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { peekDeadLetters, type DeadLetterView } from './deadLetters.ts';
import { replayDeadLetters, type ReplayOperation, type ReplayPreview } from './replay.ts';
import { ReplayJournal, type DeadLetterKey } from './replayJournal.ts';
import { deadLetterOnMain, refusedCommand, type DeadLetterSeed } from './testing/mainDeadLetters.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const stack = useConsoleStack({ database: 'replaywarnedlisted', env: { NIMBUS_RATE_LIMIT_BURST: '1000' } });

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const req = (method: string, body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const routes = {
  replay: () => import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts'),
  preview: () => import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts'),
  operation: () => import('../../app/api/topology/operations/[operationId]/route.ts'),
};

/** An ordinary event (not warned), as the subscriber leaves one in its dead-letter queue; refusedCommand is a warned one. */
const ordinary = (ep: string): DeadLetterSeed => ({
  message: { messageId: randomUUID(), body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-2' })), applicationProperties: { [Prop.To]: ep, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: `e-${randomUUID()}` } },
  reason: 'MaxDeliveryCountExceeded',
});

/** Dead-letters each message from `ep`'s main subscription (mainDeadLetters.ts); the dead letters, in order. */
async function deadLetter(ep: string, seeds: DeadLetterSeed[]): Promise<DeadLetterView[]> {
  await deadLetterOnMain(stack.serviceBus.client, ep, seeds);
  const ids = seeds.map(({ message }) => String(message.messageId));
  const found = await inQueue(ep, ids);
  assert.equal(found.length, ids.length, 'every seeded dead letter is in the queue');
  return found;
}

/** The dead letters of `ep`'s main subscription among `messageIds`, in the order of `messageIds`. */
async function inQueue(ep: string, messageIds: string[]): Promise<DeadLetterView[]> {
  const byId = new Map<string, DeadLetterView>();
  let from: string | undefined;
  for (;;) {
    const page = await peekDeadLetters(stack.serviceBus.client, ep, ep, { pageSize: 100, ...(from ? { from } : {}) });
    for (const d of page.items) if (d.messageId && messageIds.includes(d.messageId)) byId.set(d.messageId, d);
    if (!page.next || page.scanned === 0) break;
    from = page.next;
  }
  return messageIds.flatMap((id) => byId.get(id) ?? []);
}

const keyOf = (ep: string, d: DeadLetterView): DeadLetterKey => ({ topic: ep, subscription: ep, sequenceNumber: d.sequenceNumber, messageId: d.messageId });

/**
 * Leaves `d` as a replay that died right after its claim leaves it (replay.ts crashPoints.afterClaim): its journal
 * record `sending`, so the console shows it uncertain with "Remove as delivered" / "Resend anyway".
 */
async function uncertain(journal: ReplayJournal, ep: string, d: DeadLetterView): Promise<void> {
  const claim = await journal.claim(keyOf(ep, d), { operationId: randomUUID(), auditor: 'a replay that died' });
  assert.ok(claim, 'claimed');
}

async function postReplay(ep: string, body: unknown): Promise<Response> {
  return (await routes.replay()).POST(req('POST', body), params({ topic: ep, subscription: ep }));
}

async function finished(operationId: string): Promise<ReplayOperation> {
  const op = await routes.operation();
  return eventually(async () => {
    const r = (await (await op.GET(req('GET'), params({ operationId }))).json()) as ReplayOperation;
    return r.state === 'running' ? undefined : r;
  }, `replay ${operationId} to end`, 60_000);
}

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

    const previewRes = await (await routes.preview()).POST(req('POST', selection), params({ topic: ep, subscription: ep }));
    assert.equal(previewRes.status, 200, await previewRes.clone().text());
    const preview = (await previewRes.json()) as ReplayPreview;
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
