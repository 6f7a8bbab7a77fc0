// The replay journal on the embedded Cosmos server (real @azure/cosmos client): one claim per dead letter even
// when two consoles race for it, every transition conditional on the etag read, and a released claim makes
// the dead letter claimable again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../../lib/store/index.ts';
import { CLOCK_SKEW_MS, isAboutAnother, recordIdOf, ReplayJournal, verdictOf, type DeadLetterKey, type JournalRecord } from './replayJournal.ts';

let cosmos: EmbeddedCosmos;
let store: MessageStore;
let journal: ReplayJournal;
before(async () => {
  cosmos = await startEmbeddedCosmos({ port: 0 });
  store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'journal' });
  journal = new ReplayJournal(store.database);
});
after(async () => {
  await store?.close();
  await cosmos?.close();
});

const key = (seq: string): DeadLetterKey => ({ topic: 'Resolver', subscription: 'Resolver', sequenceNumber: seq, messageId: randomUUID() });

test('two consoles claiming one dead letter: exactly one wins, the other sees its record', async () => {
  const k = key('7');
  const [a, b] = await Promise.all([journal.claim(k, { operationId: 'op-a', auditor: 'a' }), journal.claim(k, { operationId: 'op-b', auditor: 'b' })]);
  assert.equal([a, b].filter(Boolean).length, 1);
  const winner = (a ?? b)!;
  const read = await journal.get(k);
  assert.equal(read?.record.operationId, winner.record.operationId);
  assert.equal(read?.record.state, 'sending');
  assert.equal(verdictOf(read?.record), 'uncertain');
});

test('transitions are conditional on the etag read; release frees the dead letter', async () => {
  const k = key('8');
  const claim = (await journal.claim(k, { operationId: 'op', auditor: 'x' }))!;
  const sent = await journal.transition(claim, { state: 'sent', sentAt: new Date().toISOString() });
  assert.equal(sent?.record.state, 'sent');
  assert.equal(verdictOf(sent?.record), 'alreadySent');
  assert.equal(await journal.transition(claim, { state: 'done' }), null, 'a stale etag loses');
  assert.equal(await journal.release(claim), false, 'and cannot delete either');
  assert.equal((await journal.get(k))?.record.state, 'sent');

  const k2 = key('9');
  const c2 = (await journal.claim(k2, { operationId: 'op', auditor: 'x' }))!;
  assert.equal(await journal.release(c2), true);
  assert.equal(await journal.get(k2), null);
  assert.ok(await journal.claim(k2, { operationId: 'op2', auditor: 'y' }), 'claimable again');
});

test('a recreated entity that reuses a sequence number does not inherit the old record; open records are listed per subscription', async () => {
  const a = key('10');
  const b = { ...a, messageId: randomUUID() };
  assert.notEqual(recordIdOf(a), recordIdOf(b));
  await journal.claim(a, { operationId: 'op', auditor: 'x' });
  assert.equal(await journal.get(b), null);
  const other = { ...key('11'), topic: 'billingendpoint', subscription: 'billingendpoint' };
  await journal.claim(other, { operationId: 'op', auditor: 'x' });
  const open = await journal.openRecords('resolver', 'RESOLVER');
  assert.ok(open.has(recordIdOf(a)), 'entity names are case-insensitive');
  assert.ok(!open.has(recordIdOf(other)));
});

test('consoles opening the journal at the same moment all get it (the container is created once)', async () => {
  const stores: MessageStore[] = [];
  try {
    for (let i = 0; i < 3; i++) stores.push(await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'journal-race' }));
    const opened = await Promise.allSettled(stores.map((s) => new ReplayJournal(s.database).openRecords('Resolver', 'Resolver')));
    assert.deepEqual(opened.map((o) => o.status), ['fulfilled', 'fulfilled', 'fulfilled']);
  } finally {
    for (const s of stores) await s.close();
  }
});

test('a record is set aside for a dead letter it cannot be about: `done`, or `sent` and claimed before the dead letter was enqueued beyond the margin', () => {
  const claimedAt = '2026-12-07T10:00:00.000Z';
  const at = (ms: number) => new Date(Date.parse(claimedAt) + ms).toISOString();
  const rec = (state: JournalRecord['state']): JournalRecord => ({
    id: 'x', scope: 's', topic: 't', subscription: 's', sequenceNumber: '1', messageId: 'm', state, operationId: 'op', auditor: 'a',
    claimedAt, sentAt: null, doneAt: null, decision: null,
  });
  assert.equal(isAboutAnother(rec('done'), null), true, 'done: its dead letter was completed before it was written');
  assert.equal(isAboutAnother(rec('sent'), at(-60_000)), false, 'enqueued before the claim: may be the claimed one');
  assert.equal(isAboutAnother(rec('sent'), at(CLOCK_SKEW_MS)), false, 'within the margin: a console clock behind the broker could explain it');
  assert.equal(isAboutAnother(rec('sent'), at(CLOCK_SKEW_MS + 1)), true, 'enqueued after the claim beyond the margin: another dead letter');
  assert.equal(isAboutAnother(rec('sent'), new Date(Date.parse(at(2)))), false, 'a Date as well');
  assert.equal(isAboutAnother(rec('sent'), at(2), 1), true, 'the margin is a parameter');
  assert.equal(isAboutAnother(rec('sent'), null), false, 'an unknown enqueue time sets nothing aside');
  assert.equal(isAboutAnother(rec('sent'), 'not a time'), false);
  assert.equal(isAboutAnother(rec('sending'), at(CLOCK_SKEW_MS * 10)), false, 'an uncertain one waits for its decision whatever the times');
  assert.equal(verdictOf(rec('sent'), at(CLOCK_SKEW_MS + 1)), 'none');
  assert.equal(verdictOf(rec('sent'), at(0)), 'alreadySent');
  assert.equal(verdictOf(rec('sent')), 'alreadySent');
  assert.equal(verdictOf(rec('sending'), at(CLOCK_SKEW_MS + 1)), 'uncertain');
  assert.equal(new ReplayJournal(store.database, { clockSkewMs: 0 }).verdictOf(rec('sent'), at(1)), 'none');
});

test('a claim over a record about another dead letter: conditional on the etag read, fresh when the record is gone, never over `sending`', async () => {
  const k = key('12');
  const by = { operationId: 'op-new', auditor: 'z' };
  const claim = (await journal.claim(k, { operationId: 'op-old', auditor: 'x' }))!;
  await assert.rejects(journal.reclaim(claim, by), /never claimed over/);
  const sent = (await journal.transition(claim, { state: 'sent', sentAt: new Date().toISOString() }))!;
  const done = (await journal.transition(sent, { state: 'done', doneAt: new Date().toISOString() }))!;
  assert.equal(await journal.reclaim(sent, by), null, 'a stale etag loses');
  const over = await journal.reclaim(done, by);
  assert.deepEqual({ state: over?.record.state, operationId: over?.record.operationId }, { state: 'sending', operationId: 'op-new' });

  // Deleted since the read (retention pruning): claimed fresh instead of read as a lost race.
  const k2 = key('13');
  const c2 = (await journal.claim(k2, { operationId: 'op-old', auditor: 'x' }))!;
  const s2 = (await journal.transition(c2, { state: 'sent', sentAt: new Date().toISOString() }))!;
  const d2 = (await journal.transition(s2, { state: 'done', doneAt: new Date().toISOString() }))!;
  assert.equal(await journal.release(d2), true);
  const fresh = await journal.reclaim(d2, by);
  assert.deepEqual({ state: fresh?.record.state, operationId: fresh?.record.operationId }, { state: 'sending', operationId: 'op-new' });
  assert.equal((await journal.get(k2))?.record.operationId, 'op-new');
  // ...unless someone claimed it first: theirs stands.
  assert.equal(await journal.release(fresh!), true);
  assert.ok(await journal.claim(k2, { operationId: 'op-other', auditor: 'y' }));
  assert.equal(await journal.reclaim(d2, by), null);
  assert.equal((await journal.get(k2))?.record.operationId, 'op-other');
});
