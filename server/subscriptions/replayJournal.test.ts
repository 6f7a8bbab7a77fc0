// The replay journal on the embedded Cosmos server (real @azure/cosmos client): one claim per dead letter even
// when two consoles race for it, every transition conditional on the etag read, and a released claim makes
// the dead letter claimable again.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../../lib/store/index.ts';
import { recordIdOf, ReplayJournal, verdictOf, type DeadLetterKey } from './replayJournal.ts';

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
