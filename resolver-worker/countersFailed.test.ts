// A status write the store reports with `counters: 'failed'` (the row written, its counter delta not exact: a terminal
// write over a row that no longer parses counts the new bucket without taking the old one's) must not pass silently:
// the Resolver logs a warning naming the endpoint and the recount that repairs it, with ids only, never the payload.
// On the embedded servers with the real clients; the row is broken past the store, as a damaged document would be.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS } from '../lib/store/index.ts';
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

test('a response over a row that no longer parses is recorded, and the counters drift is logged with the recount to run', async () => {
  const ep = uniq('crm');
  const eventId = uniq('e');
  const secret = `payload-${randomUUID()}`;
  const request = await h.send({ type: T.EventRequest, eventId, to: ep, from: 'shop', body: orderBody({ secret }) });
  await h.settledOk(request.messageId);
  // Break the stored row (an unknown status), past the store.
  const events = h.store.database.container(CONTAINERS.events);
  const { resources } = await events.items
    .query({ query: 'SELECT * FROM c WHERE c.endpointId = @ep AND c.eventId = @ev', parameters: [{ name: '@ep', value: ep }, { name: '@ev', value: eventId }] })
    .fetchAll();
  assert.equal(resources.length, 1);
  const { _rid, _self, _etag, _attachments, _ts, ...row } = resources[0] as Record<string, unknown>;
  void [_rid, _self, _etag, _attachments, _ts];
  await events.items.upsert({ ...row, status: 'Exploded' });

  const response = await h.send({ type: T.ResolutionResponse, eventId, from: ep, parentMessageId: request.messageId });
  await h.settledOk(response.messageId);
  assert.equal((await h.store.getStatusRow(ep, eventId, 's-1'))?.status, 'Completed', 'a terminal write repairs the row');
  // On the code before: no line at all (the result's counters: 'failed' was read by nobody).
  const warned = lines.filter((l) => l.includes('counters may be off'));
  assert.equal(warned.length, 1, lines.join('\n'));
  assert.match(warned[0]!, new RegExp(`npm run recount -- ${ep}`));
  assert.match(warned[0]!, new RegExp(response.messageId));
  assert.ok(!lines.some((l) => l.includes(secret)), 'no payload in the log');
});
