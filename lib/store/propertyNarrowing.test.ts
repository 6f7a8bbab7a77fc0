// The embedded server narrows a query by its top-level equality terms on properties other than the partition key
// (embeddedQueries.ts fix 4): it must change what a query costs, never what it returns. Here the store's own reads
// (its real query texts: event list filters, parked siblings with and without the blocker rule, recounts, history
// answers, event details) run twice over the same documents, with the narrowing off and on, and must give the same
// pages, in the same order, through the same continuation tokens. The documents are varied on purpose: rows written
// by the store, and rows planted raw with the narrowed properties missing, null, numbers where strings are expected
// ('7' against 7), empty, arrays and objects. Then writes that move, change and delete rows, and the same again.
// Real @azure/cosmos client on the embedded server.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T, blockedByReason } from '@nimbus/sdk/contract';
import { eventDetails } from '../../server/queries.ts';
import { documentsQueried, setKeyGroupScannedWhole, setPropertyNarrowing } from './embeddedQueries.ts';
import type { Page } from './paging.ts';
import type { MessageStore } from './store.ts';
import { msg, startStoreFixture, type StoreFixture } from './testing/fixtures.ts';

const EP = 'narrowendpoint';
let fx: StoreFixture;
let store: MessageStore;

async function record(type: T, eventId: string, sessionId: string, extra: Record<string, unknown> = {}) {
  const m = msg(type, { endpointId: EP, eventId, sessionId, ...extra });
  await store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  return m;
}

async function fail(eventId: string, sessionId: string, eventTypeId = 'OrderPlaced') {
  const request = await record(T.EventRequest, eventId, sessionId, { eventTypeId });
  await record(T.ErrorResponse, eventId, sessionId, { parentMessageId: request.messageId, errorText: 'boom', eventTypeId });
  return request;
}

/** Every page of a paged read, 2 at a time: the continuation tokens are part of what must not change. */
async function allPages<I>(read: (continuationToken: string | undefined) => Promise<Page<I>>): Promise<Array<Page<I>>> {
  const pages: Array<Page<I>> = [];
  let token: string | undefined;
  do {
    const page = await read(token);
    pages.push(page);
    token = page.continuationToken;
  } while (token !== undefined && pages.length < 100);
  return pages;
}

let blockerRequest: Awaited<ReturnType<typeof fail>>;

/** The store's reads whose queries carry equality terms, each labelled; their results must not depend on narrowing. */
async function readEverything(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const list = (label: string, filter: Record<string, unknown>) =>
    allPages((continuationToken) => store.listEvents({ endpointId: EP, pageSize: 2, continuationToken, ...filter })).then((p) => (out[label] = p));
  await list('list: all', {});
  await list('list: failed', { statuses: ['Failed'] });
  await list('list: session S1', { sessionId: 'S1' });
  await list('list: session 7 (a number planted too)', { sessionId: '7' });
  await list('list: session empty', { sessionId: '' });
  await list('list: session unknown', { sessionId: 'nobody' });
  await list('list: type', { eventTypeId: 'OrderShipped' });
  await list('list: type and session', { eventTypeId: 'OrderPlaced', sessionId: 'S1', statuses: ['Failed', 'Deferred'] });
  await list('list: event id', { eventId: 'e-1' });
  await list('list: handoffs', { handoffOnly: true });
  for (const sessionId of ['S1', 'S-BLOCKED', '7', '', 'nobody']) {
    for (const blockedBy of [undefined, 'blocker', 'parked-1', 'nobody']) {
      out[`parked: ${sessionId} behind ${blockedBy}`] = await allPages((continuationToken) =>
        store.listParkedSiblings({ endpointId: EP, sessionId, pageSize: 2, continuationToken, ...(blockedBy ? { blockedBy } : {}) }),
      );
    }
  }
  out['recount'] = stripVolatile(await store.recountEndpoint(EP));
  out['history answers'] = await store.listHistoryAnswers('blocker', EP, 'S-BLOCKED', blockerRequest.messageId);
  out['history after'] = await store.listHistoryAfter('blocker', EP, 'S-BLOCKED', '2000-01-01T00:00:00.000Z', ['Failed', 'Pending', 'DeadLettered']);
  for (const eventId of ['blocker', 'e-1', 'raw-7', 'parked-3'])
    out[`details ${eventId}`] = await eventDetails(store, EP, eventId).then(stripVolatile, (err: Error) => ({ error: err.message }));
  return out;
}

/** A recount carries the time it was made at (the stepping clock moves on every read): not part of the comparison. */
function stripVolatile(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (k, x: unknown) => (k === 'recountedAt' ? undefined : x)));
}

/** The reads with the narrowing off, then on; both must be equal, and on must have run over fewer documents. */
async function compareBothWays(): Promise<void> {
  setPropertyNarrowing(false);
  const offBefore = documentsQueried();
  const off = await readEverything();
  const offCost = documentsQueried() - offBefore;
  setPropertyNarrowing(true);
  const onBefore = documentsQueried();
  const on = await readEverything();
  const onCost = documentsQueried() - onBefore;
  for (const label of Object.keys(off)) assert.deepEqual(on[label], off[label], label);
  assert.ok(onCost < offCost, `narrowed reads ran over ${onCost} documents, unnarrowed over ${offCost}`);
}

before(async () => {
  // The endpoint here has a few hundred rows: narrow its partition further anyway, as a large one is.
  setKeyGroupScannedWhole(0);
  fx = await startStoreFixture();
  store = fx.store;
  // Rows the store writes: failures in several sessions and types, one event in two sessions, a blocker with rows
  // parked behind it (the Resolver's form: the blocker named in the park reason only) and a handoff.
  blockerRequest = await fail('blocker', 'S-BLOCKED');
  for (let i = 0; i < 6; i++)
    await record(T.DeferralResponse, `parked-${i}`, 'S-BLOCKED', { errorText: blockedByReason('S-BLOCKED', 'blocker') });
  await record(T.DeferralResponse, 'parked-other', 'S-BLOCKED', { errorText: 'waiting on something else' });
  for (let i = 0; i < 5; i++) await fail(`e-${i}`, i % 2 === 0 ? 'S1' : 'S2', i % 3 === 0 ? 'OrderShipped' : 'OrderPlaced');
  await fail('e-1', 'S1');
  await record(T.DeferralResponse, 'parked-s1', 'S1', { errorText: blockedByReason('S1', 'e-0') });
  await record(T.EventRequest, 'e-pending', '7');
  await record(T.PendingHandoffResponse, 'e-handoff', 'S1');

  // Rows planted raw, with the narrowed properties in every shape the engine's `=` must tell apart.
  const events = fx.raw.database(fx.database).container('events');
  const base = { endpointId: EP, eventTypeId: 'OrderPlaced', updatedAt: '2026-12-01T10:00:00.000Z', createdAt: '2026-12-01T10:00:00.000Z' };
  const planted: Array<Record<string, unknown>> = [
    { eventId: 'raw-7', sessionId: 7, status: 'Deferred' },
    { eventId: 'raw-7', sessionId: '7', status: 'Deferred', errorText: blockedByReason('7', 'parked-1') },
    { eventId: 'raw-missing', status: 'Deferred' },
    { eventId: 'raw-null', sessionId: null, status: null },
    { eventId: 'raw-empty', sessionId: '', status: 'Deferred' },
    { eventId: 'raw-array', sessionId: ['S1'], status: ['Deferred'] },
    { eventId: 'raw-object', sessionId: { id: 'S1' }, status: 'Failed' },
    { eventId: 'raw-case', sessionId: 's1', status: 'deferred' },
    { eventId: 'raw-nostatus', sessionId: 'S1', eventTypeId: 7 },
    { eventId: 'raw-handoff', sessionId: 'S1', status: 'Pending', subStatus: 'Handoff' },
    { eventId: 'raw-blocked', sessionId: 'S-BLOCKED', status: 'Deferred', blockedBy: 'blocker' },
  ];
  for (const [i, doc] of planted.entries()) await events.items.create({ id: `raw-${i}`, ...base, ...doc });
});

after(async () => {
  setPropertyNarrowing(true);
  setKeyGroupScannedWhole(undefined);
  await fx?.close();
});

test("the store's reads give the same pages with the narrowing on and off, over varied documents", async () => {
  await compareBothWays();
});

test('and again after writes that move rows between sessions and statuses, replace and delete them', async () => {
  // The groups were built by the reads above; these writes must keep them exact.
  await record(T.ResolutionResponse, 'parked-2', 'S-BLOCKED');
  await record(T.ResolutionResponse, 'e-0', 'S1');
  await fail('parked-4', 'S-BLOCKED');
  await fail('e-new', 'S1', 'OrderShipped');
  await record(T.DeferralResponse, 'e-new-parked', 'S1', { errorText: blockedByReason('S1', 'e-new') });
  const events = fx.raw.database(fx.database).container('events');
  await events.item('raw-0', [EP, 'raw-7']).replace({ id: 'raw-0', endpointId: EP, eventId: 'raw-7', sessionId: 'S1', status: 'Deferred', updatedAt: '2026-12-01T09:00:00.000Z' });
  await events.item('raw-4', [EP, 'raw-empty']).patch([{ op: 'set', path: '/sessionId', value: 'S-BLOCKED' }]);
  await events.item('raw-2', [EP, 'raw-missing']).patch([{ op: 'add', path: '/sessionId', value: 'S1' }]);
  await events.item('raw-10', [EP, 'raw-blocked']).delete();
  await compareBothWays();
});
