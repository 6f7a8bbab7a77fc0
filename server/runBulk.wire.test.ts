// What a synchronous bulk command (runBulk: the console's bulk resubmit/skip routes) sends to Cosmos, counted at the
// wire: the store goes through a recording proxy in front of the embedded server (real clients, real Manager). The
// events' sessions and their row counts come from one query of the endpoint's partitions; the Manager's lot must
// not query the same partitions again to count the rows the bulk command has just read.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { createStore, type MessageStore } from '../lib/store/index.ts';
import { startFaultProxy, type FaultProxy } from '../lib/store/testing/faultProxy.ts';
import { msg, uniq } from '../lib/store/testing/fixtures.ts';
import { statusRowId } from '../lib/store/ids.ts';
import { CONTAINERS } from '../lib/store/store.ts';
import { runBulk } from './api.ts';
import type { ConsoleContext } from './context.ts';
import { Manager } from './manager/manager.ts';
import { startConsoleTestStack, type ConsoleTestStack } from './testing/stack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const DATABASE = 'bulkwire';
let stack: ConsoleTestStack;
let proxy: FaultProxy;
let store: MessageStore;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack(DATABASE);
  proxy = await startFaultProxy(stack.cosmos.endpoint);
  store = await createStore({ endpoint: proxy.endpoint, key: stack.cosmos.key, database: DATABASE });
  manager = new Manager({ store, client: stack.serviceBus.client });
});
after(async () => {
  await manager?.close();
  await store?.close();
  await proxy?.close();
  await stack?.close();
});

/** A Failed event in its own session (or in `sessionId`). */
async function failedEvent(eventId = uniq('bulk'), sessionId = `S-${eventId}`): Promise<string> {
  const w = await stack.store.writeStatus(msg(MessageType.ErrorResponse, { endpointId: EP, eventId, sessionId, errorText: 'boom' }));
  assert.ok(w.outcome === 'written');
  return eventId;
}

test('a bulk skip of 5 events on one endpoint: one query of the events container', async () => {
  // runBulk reads the context's store and Manager only; both are the real ones, on the proxied store.
  const ctx = { store, manager } as unknown as ConsoleContext;
  // The store's first use opens its containers: not part of a bulk command's cost.
  await runBulk(ctx, EP, [await failedEvent()], { kind: 'skip' }, 'tester');
  const eventIds = await Promise.all(Array.from({ length: 5 }, () => failedEvent()));
  const from = proxy.seen.length;
  const r = await runBulk(ctx, EP, eventIds, { kind: 'skip' }, 'tester');
  const sent = proxy.seen.slice(from);
  assert.deepEqual(r.results.map((x) => x.outcome), eventIds.map(() => 'sent'), JSON.stringify(r.results));
  const queries = sent.filter((q) => q.query && /\/colls\/events\/docs$/.test(q.path));
  assert.equal(queries.length, 1, `events-container queries, of: ${sent.map((q) => `${q.method} ${q.path}${q.query ? ' (query)' : ''}${q.batch ? ' (batch)' : ''}`).join(', ')}`);
});

test("a row whose session no longer reads is counted: the event is refused 409 naming it, the others are sent", async () => {
  const ctx = { store, manager } as unknown as ConsoleContext;
  const damaged = await failedEvent(uniq('damaged'), 'S-A');
  await failedEvent(damaged, 'S-B');
  const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(damaged, 'S-A'), [EP, damaged]);
  const { resource } = await item.read<Record<string, unknown>>();
  await item.replace({ ...resource!, sessionId: 42 });
  const sessions = await store.listEventSessions(EP, [damaged]);
  assert.deepEqual(sessions?.get(damaged), { sessions: ['S-B'], rows: 2 }, 'counted, though it cannot be point-read');

  const healthy = await failedEvent();
  const r = await runBulk(ctx, EP, [damaged, healthy], { kind: 'skip' }, 'tester');
  const [refused, sent] = r.results;
  assert.equal(sent?.outcome, 'sent', JSON.stringify(sent));
  assert.ok(refused?.outcome === 'error' && refused.status === 409, JSON.stringify(refused));
  assert.match(refused.detail, new RegExp(`no longer parse: ${statusRowId(damaged, 'S-A')}`));
  assert.equal((await store.getStatusRow(EP, damaged, 'S-B'))?.status, 'Failed', 'the other session was not claimed');
});
