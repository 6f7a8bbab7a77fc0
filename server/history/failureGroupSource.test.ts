// The "new failure group" alert rule reads the failure groups the Failures page shows: one entry per group and
// endpoint, filtered by endpoint when the rule names one.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg, startStoreFixture, type StoreFixture } from '../../lib/store/testing/fixtures.ts';
import type { ConsoleContext } from '../context.ts';
import { storeFailureGroups } from './background.ts';

let f: StoreFixture;
before(async () => {
  f = await startStoreFixture({ now: () => new Date() });
});
after(async () => {
  await f.close();
});

async function fail(endpointId: string, eventId: string, errorType: string, errorText: string) {
  const request = msg(T.EventRequest, { endpointId, eventId, eventTypeId: 'OrderPlaced', payload: {} });
  await f.store.writeStatus(request);
  await f.store.writeStatus(msg(T.ErrorResponse, { endpointId, eventId, parentMessageId: request.messageId, errorType, errorText }));
}

test('failure groups reach the alert rule per endpoint', async () => {
  await fail('billing', 'b-1', 'CrmDown', 'CRM answered 503 for order ORD-1');
  await fail('billing', 'b-2', 'CrmDown', 'CRM answered 503 for order ORD-2');
  await fail('erp', 'e-1', 'CrmDown', 'CRM answered 503 for order ORD-9');
  await fail('erp', 'e-2', 'LedgerClosed', 'period 2026-11 is closed');
  const source = storeFailureGroups({ store: f.store } as unknown as ConsoleContext);
  assert.equal(source.available, true);
  const all = await source.list(null);
  const crm = all.filter((g) => g.label.startsWith('CrmDown'));
  assert.deepEqual(crm.map((g) => [g.endpointId, g.count]).sort(), [['billing', 2], ['erp', 1]]);
  assert.equal(new Set(crm.map((g) => g.fingerprint)).size, 1, 'one cause, one fingerprint across endpoints');
  const erp = await source.list('erp');
  assert.deepEqual(erp.map((g) => g.endpointId), ['erp', 'erp']);
});
