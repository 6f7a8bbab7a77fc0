// A status write over a row that no longer parses, through the Resolver: the store recounts the endpoint itself, so
// the counters equal a recount with no operator (docs/store.md, "A terminal write over an unreadable row"); when even
// that cannot be done (the counters document does not parse either), the result's `counters: 'failed'` must not pass
// silently: the Resolver logs a warning naming the endpoint and the recount that repairs it, with ids only, never the
// payload. On the embedded servers with the real clients; the row is broken past the store, as a damaged document would be.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, COUNTER_DOC_ID } from '../lib/store/index.ts';
import { ResolverHarness, orderBody } from './testHarness.ts';

let h: ResolverHarness;
const lines: string[] = [];
before(async () => {
  h = await ResolverHarness.start();
  h.resolver({ log: pino({ level: 'warn' }, new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) })) });
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

/** Gives the stored row of the event an unknown status, past the store. */
async function breakRow(ep: string, eventId: string): Promise<void> {
  const events = h.store.database.container(CONTAINERS.events);
  const { resources } = await events.items
    .query({ query: 'SELECT * FROM c WHERE c.endpointId = @ep AND c.eventId = @ev', parameters: [{ name: '@ep', value: ep }, { name: '@ev', value: eventId }] })
    .fetchAll();
  assert.equal(resources.length, 1);
  const { _rid, _self, _etag, _attachments, _ts, ...row } = resources[0] as Record<string, unknown>;
  void [_rid, _self, _etag, _attachments, _ts];
  await events.items.upsert({ ...row, status: 'Exploded' });
}

test('a response over a row that no longer parses is recorded, and the store recounts the endpoint: counters equal a recount, no warning', async () => {
  const ep = uniq('crm');
  const [eventId, other] = [uniq('e'), uniq('e')];
  const request = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', body: orderBody({}) });
  await h.settledOk(request.messageId);
  await h.settledOk((await h.send({ type: T.EventRequest, eventId: other, to: ep, from: 'shop', body: orderBody({}) })).messageId);
  await breakRow(ep, eventId);

  const response = await h.send({ type: T.ResolutionResponse, eventId, from: ep, parentMessageId: request.messageId });
  await h.settledOk(response.messageId);
  assert.equal((await h.store.getStatusRow(ep, eventId, 's-1'))?.status, 'Completed', 'a terminal write repairs the row');
  // On the code before: stored pending 2 (the broken row's Pending never taken), a recount's 1, until an operator ran it.
  const stored = (await h.store.getCounts(ep)).buckets;
  const recounted = (await h.store.recountEndpoint(ep)).buckets;
  assert.deepEqual(stored, recounted);
  assert.deepEqual([recounted.Pending, recounted.Completed], [1, 1]);
  assert.ok(!lines.some((l) => l.includes(ep) && l.includes('counters may be off')), lines.join('\n'));
});

test('a response over a row that no longer parses, on an endpoint whose counters document does not parse either: logged with the recount to run', async () => {
  const ep = uniq('crm');
  const eventId = uniq('e');
  const secret = `payload-${randomUUID()}`;
  const request = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', body: orderBody({ secret }) });
  await h.settledOk(request.messageId);
  await breakRow(ep, eventId);
  // The counters document broken too: its `flushed` cannot be trusted, so the store leaves it to the operator's recount.
  const counters = h.store.database.container(CONTAINERS.counters);
  const { resource } = await counters.item(COUNTER_DOC_ID, ep).read<Record<string, unknown>>();
  await counters.item(COUNTER_DOC_ID, ep).replace({ ...resource, counts: 'garbled' });

  const response = await h.send({ type: T.ResolutionResponse, eventId, from: ep, parentMessageId: request.messageId });
  await h.settledOk(response.messageId);
  assert.equal((await h.store.getStatusRow(ep, eventId, 's-1'))?.status, 'Completed', 'a terminal write repairs the row');
  // Before the warning existed: no line at all (the result's counters: 'failed' was read by nobody).
  const warned = lines.filter((l) => l.includes(ep) && l.includes('counters may be off'));
  assert.equal(warned.length, 1, lines.join('\n'));
  assert.match(warned[0]!, new RegExp(`npm run recount -- ${ep}`));
  assert.match(warned[0]!, new RegExp(response.messageId));
  assert.ok(!lines.some((l) => l.includes(secret)), 'no payload in the log');
});
