// Reconcile's answer rule in its two forms (answerRule.ts) on the embedded Cosmos server, through the real store and
// the real @azure/cosmos client: the query term matches every entry isAnswer calls an answer, over every message
// type, From, dead-letter reason and description, and no other entry but the one kind it is documented to be wider
// on; listHistoryAnswers returns exactly isAnswer's entries. The defect it fixes: the answers query read the newest
// entries naming a message whether or not they were answers, so eleven newer notices or history-only entries hid a
// real answer from its limit of ten. Beside it, listHistoryRefusals: the newest CommandRefused notice, whatever else
// names the message.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_MESSAGE_TYPES, CONTROL_REQUEST_TYPES, isHistoryOnly, MessageType as T, type MessageType } from '@nimbus/sdk/contract';
import { answerSql, isAnswer } from './answerRule.ts';
import type { HistoryWrite } from './schemas.ts';
import { count, requestsDuring } from './testing/requestCount.ts';
import { at, msg, startStoreFixture, uniq, type StoreFixture } from './testing/fixtures.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture();
});
after(async () => {
  await f?.close();
});

const EP = 'billingendpoint';

/** An entry naming `parent` on EP's session s-1, enqueued at `s`. */
const naming = (eventId: string, parent: string, messageType: MessageType, s: number, over: Partial<HistoryWrite> = {}): HistoryWrite => ({
  ...msg(messageType, { endpointId: EP, eventId, parentMessageId: parent }),
  enqueuedAt: at(s),
  ...over,
});

/** isAnswer on an entry as written (its optional fields as the store defaults them). */
const rule = (h: HistoryWrite) => isAnswer({ messageType: h.messageType, from: h.from ?? null, deadLetterReason: h.deadLetterReason ?? null, deadLetterErrorDescription: h.deadLetterErrorDescription ?? null });

async function recordAll(entries: HistoryWrite[]) {
  // In small parallel batches: hundreds of writes one by one cost seconds on a loaded machine.
  for (let i = 0; i < entries.length; i += 32) await Promise.all(entries.slice(i, i + 32).map((h) => f.store.recordHistory(h)));
}

test('the query term matches every answer and no other entry but a control request with a blank description', async () => {
  const eventId = uniq('rule');
  const parent = uniq('command');
  const entries: HistoryWrite[] = [];
  for (const messageType of ALL_MESSAGE_TYPES)
    for (const from of ['Manager', 'mAnAgEr', 'shop', null])
      for (const deadLetterReason of [null, 'CommandRefused', 'ReplayGap', 'MaxDeliveryCountExceeded'])
        for (const deadLetterErrorDescription of [null, '', ' \t', 'delivered 10 times'])
          entries.push(naming(eventId, parent, messageType, entries.length, { from, deadLetterReason, deadLetterErrorDescription }));
  await recordAll(entries);
  const stored = new Map(entries.map((h) => [h.messageId, h]));
  const label = (id: string) => JSON.stringify(stored.get(id), ['messageType', 'from', 'deadLetterReason', 'deadLetterErrorDescription']);

  const { condition, parameters } = answerSql();
  const { resources } = await f.raw
    .database(f.database)
    .container('history')
    .items.query<{ messageId: string }>(
      { query: `SELECT c.messageId FROM c WHERE c.eventId = @event AND c.parentMessageId = @parent AND ${condition}`, parameters: [{ name: '@event', value: eventId }, { name: '@parent', value: parent }, ...parameters] },
      { partitionKey: eventId },
    )
    .fetchAll();
  const matched = new Set(resources.map((r) => r.messageId));
  const answers = entries.filter(rule).map((h) => h.messageId);
  // Where the term is wider, on purpose (answerRule.ts): a control request whose description is only whitespace.
  const wider = (h: HistoryWrite) => CONTROL_REQUEST_TYPES.has(h.messageType) && !isHistoryOnly(h) && (h.deadLetterErrorDescription ?? '').length > 0 && h.deadLetterErrorDescription!.trim() === '';
  assert.deepEqual(answers.filter((id) => !matched.has(id)).map(label), [], 'answers the term leaves out');
  assert.deepEqual([...matched].filter((id) => !rule(stored.get(id)!) && !wider(stored.get(id)!)).map(label), [], 'non-answers the term matches');
  assert.ok(answers.length > 100 && entries.some(wider), `the table has both kinds (${answers.length} answers of ${entries.length})`);

  const listed = await f.store.listHistoryAnswers(eventId, EP, 's-1', parent, entries.length);
  assert.deepEqual(listed.items.map((h) => h.messageId), [...answers].reverse(), 'listHistoryAnswers: exactly the answers, newest first');
  assert.deepEqual(listed.corrupt, []);
});

test('a document too damaged to parse is returned as corrupt unless its fields prove it no answer', async () => {
  const eventId = uniq('rule-corrupt');
  const parent = uniq('command');
  const history = f.raw.database(f.database).container('history');
  const plant = (doc: Record<string, unknown>) => history.items.create({ id: uniq('doc'), eventId, endpointId: EP, sessionId: 's-1', parentMessageId: parent, enqueuedAt: at(1), ...doc });
  await plant({ id: 'unknown-type', messageType: 'FromTheFuture' });
  await plant({ id: 'no-type', messageType: undefined });
  await plant({ id: 'bad-time', messageType: T.ResolutionResponse, enqueuedAt: 'yesterday' });
  await plant({ id: 'damaged-notice', messageType: T.ErrorResponse, deadLetterReason: 'CommandRefused', enqueuedAt: 'yesterday' });
  await plant({ id: 'damaged-trigger', messageType: T.ProcessDeferredRequest, enqueuedAt: 'yesterday' });
  const { items, corrupt } = await f.store.listHistoryAnswers(eventId, EP, 's-1', parent);
  assert.deepEqual(items, []);
  assert.deepEqual(corrupt.map((c) => c.id).sort(), ['bad-time', 'no-type', 'unknown-type']);
});

test('eleven newer entries naming the message that are no answer do not hide the answer behind them: found in one query', async () => {
  const eventId = uniq('rule-hidden');
  const parent = uniq('command');
  const answer = naming(eventId, parent, T.PendingHandoffResponse, 1, { from: EP, handoffReason: 'needs approval' });
  const noAnswers = [
    (s: number) => naming(eventId, parent, T.ErrorResponse, s, { from: EP, deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'SkipRequest refused' }),
    (s: number) => naming(eventId, parent, T.ErrorResponse, s, { from: EP, deadLetterReason: 'ReplayGap', deadLetterErrorDescription: 'sequences 3-4 skipped' }),
    (s: number) => naming(eventId, parent, T.ProcessDeferredRequest, s, { from: 'self', deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'delivered 10 times' }),
    (s: number) => naming(eventId, parent, T.ResubmissionRequest, s, { from: 'shop', deadLetterErrorDescription: 'replayed by hand' }),
    (s: number) => naming(eventId, parent, T.RetryRequest, s, { from: 'Retry' }),
    (s: number) => naming(eventId, parent, T.ResubmissionRequest, s, { from: 'Manager', deadLetterErrorDescription: '   ' }),
  ];
  await recordAll([answer, ...Array.from({ length: 12 }, (_, i) => noAnswers[i % noAnswers.length]!(2 + i))]);

  const { value, requests } = await requestsDuring(() => f.store.listHistoryAnswers(eventId, EP, 's-1', parent, 10));
  assert.deepEqual(value.items.map((h) => h.messageId), [answer.messageId]);
  // One page, not a paging past the entries that are no answer: the requests of a one-page query (the refusals
  // read; the client asks the embedded server for a query plan beside each query, so a query is two POSTs here).
  const onePage = await requestsDuring(() => f.store.listHistoryRefusals(eventId, EP, 's-1', parent));
  assert.equal(count(requests, 'POST history'), count(onePage.requests, 'POST history'), `one page: ${requests.join(', ')}`);
});

test('listHistoryRefusals: the newest CommandRefused notice naming the message, whatever else names it', async () => {
  const eventId = uniq('refusals');
  const parent = uniq('command');
  const refusal = (s: number) => naming(eventId, parent, T.ErrorResponse, s, { from: EP, deadLetterReason: 'CommandRefused', deadLetterErrorDescription: `refused at ${s}` });
  const older = refusal(1);
  const newest = refusal(2);
  const others = Array.from({ length: 11 }, (_, i) => naming(eventId, parent, i % 2 ? T.ResolutionResponse : T.ErrorResponse, 3 + i, { from: EP, deadLetterReason: i % 2 ? null : 'ReplayGap' }));
  const elsewhere = [naming(eventId, parent, T.ErrorResponse, 20, { sessionId: 's-2', deadLetterReason: 'CommandRefused' }), naming(eventId, uniq('other'), T.ErrorResponse, 21, { deadLetterReason: 'CommandRefused' })];
  await recordAll([older, newest, ...others, ...elsewhere]);
  assert.deepEqual((await f.store.listHistoryRefusals(eventId, EP, 's-1', parent)).items.map((h) => h.messageId), [newest.messageId]);
  assert.deepEqual((await f.store.listHistoryRefusals(eventId, EP, 's-1', parent, 5)).items.map((h) => h.messageId), [newest.messageId, older.messageId]);
});
