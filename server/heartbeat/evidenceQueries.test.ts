// When the evidence query (evidence.ts: an endpoint's last answer) runs, and what happens when it cannot, on the
// embedded stack's real Cosmos store. The query is watched (counted, or failed like a throttled store answers) by a
// wrapper around the real client's events container; every other read and write goes to the real store.
//   - A lookup that keeps failing holds an overdue probe Pending only up to a bound: past it the sweep turns it Off
//     and says so in the log (before, such a probe kept its last status for good).
//   - /api/endpoints' read model looks up a long-overdue probe's evidence once per sweep tick, not once per poll (an
//     endpoint outside the catalog whose probe no sweep settled stays overdue and was queried on every poll); in the
//     probe's first timeout overdue, where busy may appear at any moment, every read still asks.
//   - A probe the sweep found busy is not turned Off by one failed lookup after: unknown is bounded from the newest
//     answer seen, not from the probe's send (before, a busy probe waiting minutes went Off at the first 429).
//   - The sweep settles an overdue probe of an endpoint that left the catalog (before, it stayed Pending for good on
//     /api/endpoints), and leaves one not yet overdue alone.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { CONTAINERS, type MessageStore } from '../../lib/store/index.ts';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { endpointsOverview } from '../queries.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { EVIDENCE_REUSE_MS, UNKNOWN_EVIDENCE_TIMEOUTS } from './evidence.ts';
import { PlatformDocs } from './platformDocs.ts';
import { HeartbeatService } from './scheduler.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
let docs: PlatformDocs;

before(async () => {
  stack = await startConsoleTestStack('hbevidence');
  docs = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'hbevidence' });
});
after(async () => {
  docs?.close();
  await stack?.close();
});

const isEvidenceQuery = (spec: unknown) => typeof spec === 'object' && spec !== null && String((spec as { query?: unknown }).query).includes('ARRAY_CONTAINS(@types');

/**
 * The real store, with its evidence queries passed to `onEvidence` first (with the endpoint they ask about): it counts them, or returns an error to
 * fail them with (at fetchAll, where the real client reports a 429).
 */
function watchedStore(store: MessageStore, onEvidence: (endpointId: unknown) => Error | undefined): MessageStore {
  const events = store.database.container(CONTAINERS.events);
  const watchedEvents = {
    items: {
      query: (spec: never, options?: never) => {
        if (isEvidenceQuery(spec)) {
          const err = onEvidence((spec as { parameters: Array<{ name: string; value: unknown }> }).parameters.find((p) => p.name === '@ep')?.value);
          if (err) return { fetchAll: () => Promise.reject(err) };
        }
        return events.items.query(spec, options);
      },
    },
  };
  const database = new Proxy(store.database, {
    get: (target, prop) =>
      prop === 'container'
        ? (id: string) => (id === CONTAINERS.events ? watchedEvents : target.container(id))
        : (Reflect.get(target, prop, target) as unknown),
  });
  return new Proxy(store, {
    get: (target, prop) => {
      if (prop === 'database') return database;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

const TIMEOUT_MS = 60_000; // the default timeoutSeconds (the settings are never saved here)
const agoIso = (ms: number) => new Date(Date.now() - ms).toISOString();
const statusOf = async (endpointId: string, probeId: string) => (await stack.store.listHeartbeats(endpointId, 20)).find((r) => r.probeId === probeId)?.status;

describe('the evidence query', () => {
  test('a lookup that keeps failing holds an overdue probe only up to the bound: past it the sweep turns it Off and logs it', async () => {
    const throttled = Object.assign(new Error('Request rate is large'), { code: 429 });
    let lookups = 0;
    const warnings: Array<{ obj: unknown; msg: string }> = [];
    const log = {
      info: () => undefined,
      error: () => undefined,
      warn: (obj: unknown, msg?: string) => void warnings.push(typeof obj === 'string' ? { obj: null, msg: obj } : { obj, msg: msg ?? '' }),
    };
    const service = new HeartbeatService({
      store: watchedStore(stack.store, () => {
        lookups++;
        return throttled;
      }),
      client: stack.serviceBus.client,
      catalog: stack.catalog,
      docs,
      log: log as never,
    });
    // Billing's probe is overdue by just over the bound, crm's by less: both lookups fail.
    const beyond = randomUUID();
    const within = randomUUID();
    await stack.store.recordHeartbeat({ endpointId: 'billingendpoint', probeId: beyond, status: 'Pending', sentAt: agoIso(TIMEOUT_MS * (1 + UNKNOWN_EVIDENCE_TIMEOUTS) + 5_000), intervalSeconds: 300 });
    await stack.store.recordHeartbeat({ endpointId: 'crmendpoint', probeId: within, status: 'Pending', sentAt: agoIso(TIMEOUT_MS + 30_000), intervalSeconds: 300 });

    const swept = await service.sweep();

    assert.ok(lookups >= 2, `both endpoints' evidence was asked for (${lookups})`);
    assert.equal(await statusOf('billingendpoint', beyond), 'Off', 'no evidence for two timeouts past the deadline: Off');
    assert.equal(await statusOf('crmendpoint', within), 'Pending', 'within the bound a failed lookup still leaves the probe for a later sweep');
    assert.equal(swept, 1);
    const offLine = warnings.find((w) => w.msg.includes('turned Off without evidence'));
    assert.ok(offLine, `the Off without evidence is logged: ${JSON.stringify(warnings)}`);
    assert.deepEqual(Object.keys(offLine.obj as object).sort(), ['endpointId', 'probeId', 'sentAt'], 'ids and times only, no payload');
    assert.equal((offLine.obj as { probeId: string }).probeId, beyond);
  });

  test('an overdue probe of an endpoint outside the catalog is looked up once per sweep tick, not on every /api/endpoints poll', async () => {
    const retired = 'retiredendpoint';
    assert.ok(!stack.catalog.endpoints.some((e) => e.id === retired));
    // Data for it (so /api/endpoints lists it), and a probe sent before it left the catalog, never answered.
    const request = msg(T.EventRequest, { endpointId: retired, eventId: 'RET-1', sessionId: 'RET-1', payload: {} });
    await stack.store.recordOutcome({ history: request as never, status: request });
    const start = Date.now();
    const probeId = randomUUID();
    await stack.store.recordHeartbeat({ endpointId: retired, probeId, status: 'Pending', sentAt: new Date(start - TIMEOUT_MS - 10_000).toISOString(), intervalSeconds: 300 });

    let lookups = 0;
    const store = watchedStore(stack.store, (endpointId) => {
      if (endpointId === retired) lookups++;
      return undefined;
    });
    const poll = async (atMs: number) => {
      const listed = (await endpointsOverview(store, stack.catalog, () => new Date(atMs))).find((e) => e.endpointId === retired);
      assert.ok(listed, 'the endpoint outside the catalog is listed');
      assert.equal(listed.heartbeat.busy, false);
    };

    // In its first timeout overdue, busy may appear at any moment: every read asks.
    await poll(start);
    await poll(start + 1_000);
    assert.equal(lookups, 2, 'a probe just overdue is looked up afresh');
    // Overdue by more than a timeout, the sweep would have settled it were it in the catalog: one lookup per tick.
    const late = start + TIMEOUT_MS;
    await poll(late);
    assert.equal(lookups, 3);
    await poll(late + 1_000);
    await poll(late + EVIDENCE_REUSE_MS - 1_000);
    assert.equal(lookups, 3, 'polls within the tick reuse it');
    await poll(late + EVIDENCE_REUSE_MS + 1_000);
    assert.equal(lookups, 4, 'a tick later it is looked up again');
  });

  test('a probe the sweep found busy stays Pending through one failed lookup, though sent long past the bound', async () => {
    // erp's host works through a backlog: its probe left 5 timeouts ago and waits, while erp answered an order 5 s ago.
    const endpointId = 'erpendpoint';
    const request = msg(T.EventRequest, { endpointId, eventId: 'ERP-BUSY-1', sessionId: 'ERP-BUSY-1', payload: {} });
    const answer = msg(T.ResolutionResponse, { endpointId, eventId: 'ERP-BUSY-1', sessionId: 'ERP-BUSY-1', parentMessageId: request.messageId });
    const enqueuedAt = agoIso(5_000);
    for (const m of [request, answer]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt } as never, status: { ...m, enqueuedAt } });
    const probeId = randomUUID();
    await stack.store.recordHeartbeat({ endpointId, probeId, status: 'Pending', sentAt: agoIso(5 * TIMEOUT_MS), intervalSeconds: 300 });

    let failing = false;
    const service = new HeartbeatService({
      store: watchedStore(stack.store, (ep) => (failing && ep === endpointId ? Object.assign(new Error('Request rate is large'), { code: 429 }) : undefined)),
      client: stack.serviceBus.client,
      catalog: stack.catalog,
      docs,
    });
    await service.sweep();
    assert.equal(await statusOf(endpointId, probeId), 'Pending', 'busy: left Pending');
    // The next sweep's lookup is throttled: unknown, counted from the answer seen 5 s ago, not from the send.
    failing = true;
    await service.sweep();
    assert.equal(await statusOf(endpointId, probeId), 'Pending', 'one failed lookup after busy: still Pending, not Off');
  });

  test('the sweep turns an overdue probe of an endpoint outside the catalog Off, not a fresh one', async () => {
    const gone = 'goneendpoint';
    assert.ok(!stack.catalog.endpoints.some((e) => e.id === gone));
    const request = msg(T.EventRequest, { endpointId: gone, eventId: 'GONE-1', sessionId: 'GONE-1', payload: {} });
    await stack.store.recordOutcome({ history: request as never, status: request });
    const overdue = randomUUID();
    const fresh = randomUUID();
    await stack.store.recordHeartbeat({ endpointId: gone, probeId: overdue, status: 'Pending', sentAt: agoIso(TIMEOUT_MS + 10_000), intervalSeconds: 300 });
    await stack.store.recordHeartbeat({ endpointId: gone, probeId: fresh, status: 'Pending', sentAt: agoIso(1_000), intervalSeconds: 300 });
    const service = new HeartbeatService({ store: stack.store, client: stack.serviceBus.client, catalog: stack.catalog, docs });

    const swept = await service.sweep();

    assert.equal(await statusOf(gone, overdue), 'Off', 'nobody answered it for a whole timeout: settled like a catalog endpoint');
    assert.equal(await statusOf(gone, fresh), 'Pending', 'a probe within its timeout is left alone');
    assert.ok(swept >= 1, `counted (${swept})`);
    const listed = (await endpointsOverview(stack.store, stack.catalog)).find((e) => e.endpointId === gone);
    assert.equal(listed?.heartbeat.status, 'Off', '/api/endpoints shows the settled outcome, not Pending');
  });
});
