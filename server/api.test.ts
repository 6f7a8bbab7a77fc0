// Route handler tests against the real embedded stack: the emulator (topology from the demo catalog) through
// @azure/service-bus, the embedded Cosmos server through @azure/cosmos. The handlers are called as Next calls
// them: a web Request and a params promise.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CosmosClient } from '@azure/cosmos';
import type { ServiceBusReceivedMessage } from '@azure/service-bus';
import { decodeBody, MessageType, Prop } from '@nimbus/sdk/contract';
import { useConsoleStack } from './testing/consoleStack.ts';
import { seedEvent, XSS_TEXT } from './testing/seed.ts';
import { drainSession } from './testing/sessionWire.ts';
import { statusRowId } from '../lib/store/index.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let routes: Awaited<ReturnType<typeof loadRoutes>>;

async function loadRoutes() {
  return {
    endpoints: await import('../app/api/endpoints/route.ts'),
    endpoint: await import('../app/api/endpoints/[endpointId]/route.ts'),
    events: await import('../app/api/endpoints/[endpointId]/events/route.ts'),
    event: await import('../app/api/endpoints/[endpointId]/events/[eventId]/route.ts'),
    resubmit: await import('../app/api/event/resubmit/[endpointId]/[eventId]/route.ts'),
    skip: await import('../app/api/event/skip/[endpointId]/[eventId]/route.ts'),
    bulkSkip: await import('../app/api/event/skip/route.ts'),
    complete: await import('../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts'),
    fail: await import('../app/api/event/handoff/fail/[endpointId]/[eventId]/[messageId]/route.ts'),
    ready: await import('../app/api/ready/route.ts'),
    search: await import('../app/api/search/route.ts'),
    flow: await import('../app/api/flow/route.ts'),
    audit: await import('../app/api/audit/route.ts'),
    metrics: await import('../app/api/metrics/route.ts'),
    failureGroups: await import('../app/api/failure-groups/route.ts'),
  };
}

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const get = (path: string) => new Request(`http://127.0.0.1${path}`);
const post = (path: string, body?: unknown) =>
  new Request(`http://127.0.0.1${path}`, {
    method: 'POST',
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });

/**
 * What reached the endpoint's main (session) subscription in one session, received and deleted: read to an end
 * marker (server/testing/sessionWire.ts), not for a fixed wait that also had to outlast a second after the first.
 */
const receiveMain = (endpointId: string, sessionId: string): Promise<ServiceBusReceivedMessage[]> => drainSession(stack.serviceBus.client, endpointId, sessionId);

const stack = useConsoleStack({ seed: true, prepare: async () => void (routes = await loadRoutes()) });
const seeded = stack.demo;

describe('console API on the embedded stack', () => {
  test('GET /api/endpoints lists every catalog endpoint with counts from the counters', async () => {
    const res = await routes.endpoints.GET(get('/api/endpoints'));
    assert.equal(res.status, 200);
    const body = (await res.json()) as { endpoints: Array<{ endpointId: string; counts: Record<string, number>; lastActivityAt: string | null; oldestFailureAt: string | null; heartbeat: { status: string } }> };
    assert.deepEqual(body.endpoints.map((e) => e.endpointId).sort(), stack.catalog.endpoints.map((e) => e.id).sort());
    const billing = body.endpoints.find((e) => e.endpointId === 'billingendpoint')!;
    assert.equal(billing.counts.completed, 1);
    assert.equal(billing.counts.deferred, 1);
    assert.equal(billing.counts.failed, 2, 'Failed + DeadLettered');
    assert.equal(billing.counts.deadLettered, 1);
    assert.ok(billing.lastActivityAt && billing.oldestFailureAt);
    assert.equal(billing.heartbeat.status, 'Unknown');
    const erp = body.endpoints.find((e) => e.endpointId === 'erpendpoint')!;
    assert.equal(erp.counts.pending, 2);
    assert.equal(erp.counts.handoff, 2);
  });

  test('GET /api/endpoints/{endpointId} answers its catalog facts and counts as the overview has them; 404 / 400 otherwise', async () => {
    // What the Endpoint and Event pages read instead of the whole overview: the same fields, from one point read.
    const res = await routes.endpoint.GET(get('/api/endpoints/billingendpoint'), params({ endpointId: 'billingendpoint' }));
    assert.equal(res.status, 200);
    const body = (await res.json()) as { endpoint: { counts: Record<string, number> }; generatedAt: string };
    const overview = (await (await routes.endpoints.GET(get('/api/endpoints'))).json()) as { endpoints: Array<Record<string, unknown>> };
    const { oldestFailureAt, lastActivityAt, heartbeat, ...fromOverview } = overview.endpoints.find((e) => e.endpointId === 'billingendpoint')!;
    assert.ok(oldestFailureAt && lastActivityAt && heartbeat, 'the overview still carries what the summary leaves out');
    assert.deepEqual(body.endpoint, fromOverview);
    assert.equal(body.endpoint.counts.failed, 2);
    assert.ok(!Number.isNaN(Date.parse(body.generatedAt)));

    const unknown = await routes.endpoint.GET(get('/api/endpoints/nope'), params({ endpointId: 'nope' }));
    assert.equal(unknown.status, 404);
    assert.match(((await unknown.json()) as { detail: string }).detail, /nope is not in the catalog/);
    const bad = await routes.endpoint.GET(get('/api/endpoints/a%20b'), params({ endpointId: 'a b' }));
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: string }).error, 'bad request');
  });

  test('the event list filters on the server and pages with a continuation', async () => {
    const ep = params({ endpointId: 'billingendpoint' });
    const failed = (await (await routes.events.GET(get('/api/endpoints/billingendpoint/events?status=Failed,DeadLettered'), ep)).json()) as { items: Array<{ eventId: string; status: string }> };
    assert.deepEqual(failed.items.map((i) => i.eventId).sort(), ['evt-dead-1', 'evt-failed-1']);

    const byText = (await (await routes.events.GET(get('/api/endpoints/billingendpoint/events?q=CARD%20declined'), ep)).json()) as { items: Array<{ eventId: string }> };
    assert.deepEqual(byText.items.map((i) => i.eventId), ['evt-failed-1']);

    const bySession = (await (await routes.events.GET(get('/api/endpoints/billingendpoint/events?sessionId=ORD-200&eventTypeId=OrderCancelled'), ep)).json()) as { items: Array<{ eventId: string }> };
    assert.deepEqual(bySession.items.map((i) => i.eventId), ['evt-parked-1']);

    const hour = 3_600_000;
    const iso = (ms: number) => new Date(Date.now() + ms).toISOString();
    const future = (await (await routes.events.GET(get(`/api/endpoints/billingendpoint/events?from=${iso(hour)}`), ep)).json()) as { items: unknown[] };
    assert.equal(future.items.length, 0);
    const window = (await (await routes.events.GET(get(`/api/endpoints/billingendpoint/events?from=${iso(-hour)}&to=${iso(hour)}`), ep)).json()) as { items: unknown[] };
    assert.equal(window.items.length, 4);
    assert.equal((await routes.events.GET(get('/api/endpoints/billingendpoint/events?from=yesterday'), ep)).status, 400);

    const seen: string[] = [];
    let continuation: string | null = null;
    do {
      const qs: string = continuation ? `&continuation=${encodeURIComponent(continuation)}` : '';
      const page = (await (await routes.events.GET(get(`/api/endpoints/billingendpoint/events?pageSize=1${qs}`), ep)).json()) as { items: Array<{ eventId: string }>; continuation: string | null };
      assert.ok(page.items.length <= 1);
      seen.push(...page.items.map((i) => i.eventId));
      continuation = page.continuation;
    } while (continuation);
    assert.equal(new Set(seen).size, 4);
    assert.equal(seen.length, 4);
  });

  test('the session filter is the exact id: spaces are part of it; an id of spaces alone is 400 with a message', async () => {
    // Session ids are whatever publishers set: "SP-1 " is another session than "SP-1", and the Endpoint page's
    // filter, like the dialogs' session read, must answer for the one asked.
    const ep = params({ endpointId: 'shippingendpoint' });
    const seed = (sessionId: string, eventId: string) =>
      seedEvent(stack.store, Date.now() - 30_000, { endpointId: 'shippingendpoint', eventId, sessionId, eventTypeId: 'OrderPlaced', payload: {} }, MessageType.ResolutionResponse);
    await seed('SP-1', 'sp-plain');
    await seed('SP-1 ', 'sp-trailing');
    await seed(' SP-1', 'sp-leading');
    const list = async (sessionId: string) => {
      const res = await routes.events.GET(get(`/api/endpoints/shippingendpoint/events?${new URLSearchParams({ sessionId })}`), ep);
      assert.equal(res.status, 200, JSON.stringify(sessionId));
      return ((await res.json()) as { items: Array<{ eventId: string }> }).items.map((i) => i.eventId);
    };
    assert.deepEqual(await list('SP-1'), ['sp-plain']);
    assert.deepEqual(await list('SP-1 '), ['sp-trailing']);
    assert.deepEqual(await list(' SP-1'), ['sp-leading']);
    const blank = await routes.events.GET(get('/api/endpoints/shippingendpoint/events?sessionId=%20%20'), ep);
    assert.equal(blank.status, 400, 'not the whole endpoint');
    const b = (await blank.json()) as { error: string; detail: string };
    assert.equal(b.error, 'bad request');
    assert.match(b.detail, /sessionId: a session id of spaces alone is not a filter/);
  });

  test('the event id and event type filters are exact too: spaces are part of them; spaces alone are 400 naming the filter', async () => {
    // Event ids are whatever publishers set, and event type ids are matched the same way: "EX-1 " is another event
    // than "EX-1". "Select all matching" (a bulk job's selection) takes the Endpoint page's filter, so it must name
    // the same rows the list shows.
    const ep = params({ endpointId: 'shippingendpoint' });
    const seed = (eventId: string, eventTypeId: string) =>
      seedEvent(stack.store, Date.now() - 30_000, { endpointId: 'shippingendpoint', eventId, sessionId: 'EXACT-1', eventTypeId, payload: {} }, MessageType.ErrorResponse, { errorText: 'exact filters' });
    await seed('EX-1', 'Exact.Type');
    await seed('EX-1 ', 'Exact.Type ');
    await seed(' EX-1', ' Exact.Type');
    const list = async (filter: Record<string, string>) => {
      const res = await routes.events.GET(get(`/api/endpoints/shippingendpoint/events?${new URLSearchParams(filter)}`), ep);
      assert.equal(res.status, 200, JSON.stringify(filter));
      return ((await res.json()) as { items: Array<{ eventId: string }> }).items.map((i) => i.eventId);
    };
    assert.deepEqual(await list({ eventId: 'EX-1' }), ['EX-1']);
    assert.deepEqual(await list({ eventId: 'EX-1 ' }), ['EX-1 ']);
    assert.deepEqual(await list({ eventId: ' EX-1' }), [' EX-1']);
    assert.deepEqual(await list({ eventTypeId: 'Exact.Type' }), ['EX-1']);
    assert.deepEqual(await list({ eventTypeId: 'Exact.Type ' }), ['EX-1 ']);
    assert.deepEqual(await list({ eventTypeId: ' Exact.Type' }), [' EX-1']);
    assert.equal((await list({ eventId: '', eventTypeId: '', sessionId: 'EXACT-1' })).length, 3, 'empty is no filter');
    for (const [key, words] of [
      ['eventId', 'an event id of spaces alone is not a filter'],
      ['eventTypeId', 'an event type id of spaces alone is not a filter'],
    ] as const) {
      const blank = await routes.events.GET(get(`/api/endpoints/shippingendpoint/events?${key}=%20%20`), ep);
      assert.equal(blank.status, 400, `${key}: not the whole endpoint`);
      const b = (await blank.json()) as { error: string; detail: string };
      assert.equal(b.error, 'bad request');
      assert.match(b.detail, new RegExp(`${key}: ${words}`));
    }

    const { freezeSelection, selectionSchema } = await import('./operations/selection.ts');
    const frozen = await freezeSelection(stack.store, selectionSchema.parse({ endpointId: 'shippingendpoint', eventTypeId: 'Exact.Type ' }), { all: true });
    assert.deepEqual(frozen.map((r) => r.eventId), ['EX-1 '], 'select all matching acts on the rows listed');
    assert.equal(selectionSchema.safeParse({ endpointId: 'shippingendpoint', eventTypeId: '  ' }).success, false, 'not every type');
    // The session filter by the same rule: spaces alone refused with the list's words, empty is no filter (as on the
    // list; it matched rows whose session id is '' before), over-long refused.
    const spaces = selectionSchema.safeParse({ endpointId: 'shippingendpoint', sessionId: '   ' });
    assert.equal(spaces.success, false, 'a session id of spaces alone is refused');
    assert.match(JSON.stringify(spaces.error?.issues), /a session id of spaces alone is not a filter/);
    assert.equal(selectionSchema.parse({ endpointId: 'shippingendpoint', sessionId: '' }).sessionId, undefined, 'empty is no filter');
    assert.equal(selectionSchema.safeParse({ endpointId: 'shippingendpoint', sessionId: 'x'.repeat(129) }).success, false, 'longer than any');
  });

  test('Flow and Audit take their id filters by the same exact rule: spaces are part of the id, spaces alone are 400 naming the filter', async () => {
    // The Endpoint page's rule (server/exactIdFilters.ts) on the other pages' id filters: " OrderPlaced" is no type
    // of the catalog (Flow counted OrderPlaced for it), " AU-1" is another event than "AU-1" (the Audit log listed
    // AU-1's entries for it), and spaces alone are refused rather than read as no filter.
    const refused = async (res: Response, words: RegExp) => {
      assert.equal(res.status, 400, String(words));
      const b = (await res.json()) as { error: string; detail: string };
      assert.equal(b.error, 'bad request');
      assert.match(b.detail, words);
    };
    const flowTypes = async (eventTypeId: string) => {
      const res = await routes.flow.GET(get(`/api/flow?${new URLSearchParams({ period: '60', eventTypeId })}`));
      assert.equal(res.status, 200, JSON.stringify(eventTypeId));
      return ((await res.json()) as { eventTypes: Array<{ eventTypeId: string }> }).eventTypes.map((t) => t.eventTypeId);
    };
    assert.deepEqual(await flowTypes('OrderPlaced'), ['OrderPlaced']);
    assert.deepEqual(await flowTypes(' OrderPlaced'), [], 'no event type of the catalog is " OrderPlaced"');
    assert.deepEqual(await flowTypes(''), stack.catalog.eventTypes.map((t) => t.id), 'empty is no filter');
    await refused(await routes.flow.GET(get('/api/flow?eventTypeId=%20%20')), /eventTypeId: an event type id of spaces alone is not a filter; leave it empty for every event type/);
    await refused(await routes.flow.GET(get(`/api/flow?eventTypeId=${'x'.repeat(261)}`)), /eventTypeId: an event type id longer than 260 characters is not a filter/);

    const { writeAudit } = await import('./audit/auditLog.ts');
    const entry = (eventId: string) =>
      writeAudit(stack.store.database, {
        actorKind: 'user', actorId: 'oid-exact', actorName: 'exact@test', roles: 'Operator', action: 'exact.filters',
        endpointId: 'billingendpoint', eventId, target: null, outcome: 'succeeded', status: 200, reason: null, details: null,
      });
    await entry('AU-1');
    await entry(' AU-1');
    const audited = async (filter: Record<string, string>) => {
      const res = await routes.audit.GET(get(`/api/audit?${new URLSearchParams({ action: 'exact.filters', ...filter })}`));
      assert.equal(res.status, 200, JSON.stringify(filter));
      return ((await res.json()) as { items: Array<{ eventId: string | null }> }).items.map((i) => i.eventId).sort();
    };
    assert.deepEqual(await audited({ eventId: 'AU-1' }), ['AU-1']);
    assert.deepEqual(await audited({ eventId: ' AU-1' }), [' AU-1']);
    // An endpoint id with a space names no endpoint: a 400 before the read is authorized (it was a 403 for a scoped
    // user's own endpoint with a pasted space, and a `denied` entry).
    await refused(await routes.audit.GET(get('/api/audit?endpointId=billingendpoint%20')), /endpointId: an endpoint id is made of letters, digits, "\.", "_" and "-" alone \(no spaces\): this one names no endpoint/);
    assert.deepEqual(await audited({ endpointId: '', eventId: '' }), [' AU-1', 'AU-1'], 'empty is no filter');
    await refused(await routes.audit.GET(get('/api/audit?eventId=%20%20')), /eventId: an event id of spaces alone is not a filter; leave it empty for every event/);
    await refused(await routes.audit.GET(get('/api/audit?endpointId=%20')), /endpointId: an endpoint id of spaces alone is not a filter; leave it empty for every endpoint/);
    await refused(await routes.audit.GET(get(`/api/audit?endpointId=${'x'.repeat(51)}`)), /endpointId: an endpoint id longer than 50 characters is not a filter/);
  });

  test('metrics filters and a resubmission\'s event type take ids by the same exact rule: spaces alone are 400 naming the field', async () => {
    // The metrics route took an event type or endpoint of spaces alone (an empty chart), and a resubmission's event
    // type was trimmed (" OrderPlaced" resubmitted as OrderPlaced): the one id rule (server/exactIdFilters.ts) instead.
    const refused = async (res: Response, words: RegExp) => {
      const body = await res.text();
      assert.equal(res.status, 400, body);
      assert.match((JSON.parse(body) as { detail: string }).detail, words);
    };
    const { TimeSeriesStore } = await import('../lib/store/index.ts');
    const series = new TimeSeriesStore(stack.store.database);
    const at = new Date(Date.now() - 120_000);
    series.add({ endpointId: 'billingendpoint', eventTypeId: 'Metric.Exact', at, count: 'handled' });
    series.add({ endpointId: 'billingendpoint', eventTypeId: ' Metric.Exact', at, count: 'failed' });
    await series.close();
    const totals = async (filter: Record<string, string>) => {
      const range = { from: String(Date.now() - 3_600_000), to: String(Date.now() + 60_000) };
      const res = await routes.metrics.GET(get(`/api/metrics?${new URLSearchParams({ ...range, ...filter })}`));
      const body = await res.text();
      assert.equal(res.status, 200, `${JSON.stringify(filter)}: ${body}`);
      const sums = (JSON.parse(body) as { series: Array<{ name: string; points: Array<[number, number | null]> }> }).series.map((s) => [s.name, s.points.reduce((n, [, v]) => n + (v ?? 0), 0)]);
      return Object.fromEntries(sums.filter(([name]) => name === 'handled' || name === 'failed')) as Record<string, number>;
    };
    assert.deepEqual(await totals({ endpointId: 'billingendpoint', eventTypeId: 'Metric.Exact' }), { handled: 1, failed: 0 });
    assert.deepEqual(await totals({ endpointId: 'billingendpoint', eventTypeId: ' Metric.Exact' }), { handled: 0, failed: 1 }, 'the type with a leading space, as asked');
    const all = await totals({ endpointId: 'billingendpoint', eventTypeId: '' });
    assert.ok(all.handled! >= 1 && all.failed! >= 1, `empty is no filter: ${JSON.stringify(all)}`);
    await refused(await routes.metrics.GET(get('/api/metrics?eventTypeId=%20%20')), /eventTypeId: an event type id of spaces alone is not a filter; leave it empty for every event type/);
    await refused(await routes.metrics.GET(get('/api/metrics?endpointId=%20')), /endpointId: an endpoint id of spaces alone is not a filter; leave it empty for every endpoint/);
    await refused(await routes.metrics.GET(get(`/api/metrics?eventTypeId=${'x'.repeat(261)}`)), /eventTypeId: an event type id longer than 260 characters is not a filter/);

    // On shipping, beside the other exact-id rows: the Flow test counts billing's.
    await seedEvent(stack.store, Date.now() - 30_000, { endpointId: 'shippingendpoint', eventId: 'rs-exact-type', sessionId: 'RS-EXACT', eventTypeId: 'OrderPlaced', payload: { orderId: 'RS-EXACT' } }, MessageType.ErrorResponse, { errorText: 'exact type' });
    const ev = params({ endpointId: 'shippingendpoint', eventId: 'rs-exact-type' });
    const edited = { payload: { orderId: 'RS-EXACT' } };
    await refused(await routes.resubmit.POST(post('/x', { ...edited, eventTypeId: ' OrderPlaced' }), ev), /event type " OrderPlaced" is not in the catalog/);
    await refused(await routes.resubmit.POST(post('/x', { ...edited, eventTypeId: '  ' }), ev), /eventTypeId: an event type id of spaces alone names nothing/);
    await refused(await routes.resubmit.POST(post('/x', { ...edited, eventTypeId: '' }), ev), /eventTypeId: an event type id is empty/);
    const row = (await stack.store.getEvent('shippingendpoint', 'rs-exact-type', 1))?.rows[0];
    assert.equal(row?.status, 'Failed', 'nothing was resubmitted');
  });

  test('the failure groups\' endpoint filter is exact too: " billingendpoint" names no endpoint and spaces alone are 400, not every endpoint', async () => {
    // It was trimmed: " billingendpoint" listed billing's groups, and spaces alone listed every endpoint's.
    const groups = async (endpointId: string) => {
      const res = await routes.failureGroups.GET(get(`/api/failure-groups?${new URLSearchParams({ endpointId })}`));
      const body = await res.text();
      return { status: res.status, body, endpoints: res.status === 200 ? [...new Set((JSON.parse(body) as { groups: Array<{ endpoints: Array<{ endpointId: string }> }> }).groups.flatMap((g) => g.endpoints.map((e) => e.endpointId)))] : [] };
    };
    assert.deepEqual((await groups('billingendpoint')).endpoints, ['billingendpoint'], 'billing has failures (seeded)');
    const spaced = await groups(' billingendpoint');
    assert.equal(spaced.status, 400, spaced.body);
    assert.match((JSON.parse(spaced.body) as { detail: string }).detail, /endpointId: an endpoint id is made of letters, digits/);
    assert.ok((await groups('')).endpoints.length >= 1, 'empty is no filter');
    const blank = await groups('  ');
    assert.equal(blank.status, 400, blank.body);
    assert.match((JSON.parse(blank.body) as { detail: string }).detail, /endpointId: an endpoint id of spaces alone is not a filter; leave it empty for every endpoint/);
  });

  test('bad filters, unknown endpoints and unknown events are answered 400 / 404 with a message', async () => {
    const bad = await routes.events.GET(get('/api/endpoints/billingendpoint/events?status=Sleeping'), params({ endpointId: 'billingendpoint' }));
    assert.equal(bad.status, 400);
    const b = (await bad.json()) as { error: string; detail: string };
    assert.equal(b.error, 'bad request');
    assert.match(b.detail, /status/);
    const forged = await routes.events.GET(get('/api/endpoints/billingendpoint/events?continuation=abc'), params({ endpointId: 'billingendpoint' }));
    assert.equal(forged.status, 400);
    const unknownEp = await routes.events.GET(get('/api/endpoints/nope/events'), params({ endpointId: 'nope' }));
    assert.equal(unknownEp.status, 404);
    const unknownEvent = await routes.event.GET(get('/x'), params({ endpointId: 'billingendpoint', eventId: 'no-such-event' }));
    assert.equal(unknownEvent.status, 404);
  });

  test('event details carry the payload, history, audits and the parked siblings of the session', async () => {
    const res = await routes.event.GET(get('/x'), params({ endpointId: 'billingendpoint', eventId: 'evt-failed-1' }));
    assert.equal(res.status, 200);
    const d = (await res.json()) as { event: { status: string; payload: { note: string }; errorText: string; errorType: string }; history: Array<{ messageType: string }>; parkedSiblings: Array<{ eventId: string }> };
    assert.equal(d.event.status, 'Failed');
    assert.equal(d.event.payload.note, XSS_TEXT);
    assert.equal(d.event.errorType, 'PaymentDeclinedException');
    assert.deepEqual(d.history.map((h) => h.messageType), ['EventRequest', 'ErrorResponse']);
    assert.deepEqual(d.parkedSiblings.map((s) => s.eventId), ['evt-parked-1']);
  });

  test('flow counts each consumer\'s events per type and status over the period; a bad period is 400', async () => {
    const res = await routes.flow.GET(get('/api/flow?period=60'));
    assert.equal(res.status, 200);
    const f = (await res.json()) as { eventTypes: Array<{ eventTypeId: string; producers: string[]; consumers: Array<{ endpointId: string; counts: Record<string, number> }> }> };
    const placed = f.eventTypes.find((t) => t.eventTypeId === 'OrderPlaced')!;
    assert.deepEqual(placed.producers, ['storefrontendpoint']);
    const billing = placed.consumers.find((c) => c.endpointId === 'billingendpoint')!;
    assert.equal(billing.counts.total, 3);
    assert.equal(billing.counts.completed, 1);
    assert.equal(billing.counts.failed, 1);
    assert.equal(billing.counts.deadLettered, 1);
    const only = (await (await routes.flow.GET(get('/api/flow?eventTypeId=OrderCancelled'))).json()) as { eventTypes: Array<{ eventTypeId: string; consumers: Array<{ endpointId: string; counts: Record<string, number> }> }> };
    assert.deepEqual(only.eventTypes.map((t) => t.eventTypeId), ['OrderCancelled']);
    assert.equal(only.eventTypes[0]!.consumers.find((c) => c.endpointId === 'billingendpoint')!.counts.deferred, 1);
    assert.equal((await routes.flow.GET(get('/api/flow?period=7'))).status, 400);
  });

  test('resubmit lands on the Manager topic and reaches the endpoint session with From = Manager, once', async () => {
    const ev = params({ endpointId: 'billingendpoint', eventId: 'evt-failed-1' });
    const res = await routes.resubmit.POST(post('/x'), ev);
    assert.equal(res.status, 200, await res.clone().text());
    const r = (await res.json()) as { outcome: string; messageId: string };
    assert.equal(r.outcome, 'sent');

    // A repeated click: answered, not sent again.
    const again = (await (await routes.resubmit.POST(post('/x'), ev)).json()) as { outcome: string; messageId: string };
    assert.equal(again.outcome, 'duplicate');
    assert.equal(again.messageId, r.messageId);

    const got = await receiveMain('billingendpoint', 'ORD-200');
    assert.equal(got.length, 1, 'exactly one command reached the session');
    const m = got[0]!;
    assert.equal(m.messageId, r.messageId);
    assert.equal(m.applicationProperties?.[Prop.From], 'Manager');
    assert.equal(m.applicationProperties?.[Prop.To], 'billingendpoint');
    assert.equal(m.applicationProperties?.[Prop.MessageType], MessageType.ResubmissionRequest);
    assert.equal(m.applicationProperties?.[Prop.EventId], 'evt-failed-1');
    assert.equal(m.applicationProperties?.[Prop.ParentMessageId], seeded.failed.lastMessageId);
    const content = decodeBody(m.body);
    assert.ok(content.ok);
    assert.deepEqual(JSON.parse(content.content.EventContent!.EventJson!), seeded.failed.payload);

    const d = (await (await routes.event.GET(get('/x'), ev)).json()) as { event: { status: string }; audits: Array<{ type: string; auditor: string }> };
    assert.equal(d.event.status, 'Pending', 'the claim shows at once');
    assert.deepEqual(d.audits.map((a) => [a.type, a.auditor]), [['Resubmit', 'anonymous']]);
  });

  test('resubmit of a Completed event is 409; a bad edited body is 400', async () => {
    const done = await routes.resubmit.POST(post('/x'), params({ endpointId: 'billingendpoint', eventId: 'evt-completed-1' }));
    assert.equal(done.status, 409);
    assert.match(((await done.json()) as { detail: string }).detail, /Completed/);
    const ev = params({ endpointId: 'billingendpoint', eventId: 'evt-dead-1' });
    assert.equal((await routes.resubmit.POST(post('/x', '{not json'), ev)).status, 400);
    assert.equal((await routes.resubmit.POST(post('/x', { payload: null }), ev)).status, 400);
    assert.equal((await routes.resubmit.POST(post('/x', { payload: {}, eventTypeId: 'NoSuchType' }), ev)).status, 400);
    assert.equal((await routes.resubmit.POST(post('/x', { payload: {}, extra: 1 }), ev)).status, 400);
  });

  // The event page sends the lastMessageId it showed (components/api.ts); before, the routes took none and the Manager
  // acted on whatever the event was by then (server/manager/staleClick.test.ts has the Manager's side).
  test('resubmit and skip with a lastMessageId the event has moved on from are 409 and send nothing; with the current one they go', async () => {
    const e = await seedEvent(stack.store, Date.now() - 30_000, { endpointId: 'shippingendpoint', eventId: 'stale-click-route', sessionId: 'STALE-ROUTE', eventTypeId: 'OrderPlaced', payload: { orderId: 'STALE-ROUTE' } }, MessageType.ErrorResponse, { errorText: 'stale view' });
    const ev = params({ endpointId: e.endpointId, eventId: e.eventId });
    const changed = async (res: Response) => {
      assert.equal(res.status, 409, await res.clone().text());
      const body = (await res.json()) as { error: string; detail: string; code?: string };
      assert.match(body.detail, /changed since you opened it/);
      // A stable code beside error and detail: the event page tells this 409 from the others by it.
      assert.deepEqual([body.error, body.code], ['conflict', 'changed']);
    };
    await changed(await routes.resubmit.POST(post('/x', { lastMessageId: 'an-older-message' }), ev));
    await changed(await routes.skip.POST(post('/x', { lastMessageId: 'an-older-message' }), ev));
    assert.equal((await stack.store.getStatusRow(e.endpointId, e.eventId, e.sessionId))?.lastMessageId, e.lastMessageId, 'nothing claimed');
    // The body's new field is checked like the others.
    assert.equal((await routes.resubmit.POST(post('/x', { lastMessageId: '' }), ev)).status, 400);
    assert.equal((await routes.resubmit.POST(post('/x', { eventTypeId: 'OrderPlaced' }), ev)).status, 400, 'an event type goes with an edited payload');
    assert.equal((await routes.skip.POST(post('/x', { lastMessageId: e.lastMessageId, extra: 1 }), ev)).status, 400);

    const sent = await routes.resubmit.POST(post('/x', { lastMessageId: e.lastMessageId }), ev);
    assert.equal(sent.status, 200, await sent.clone().text());
    const r = (await sent.json()) as { outcome: string; messageId: string };
    assert.equal(r.outcome, 'sent');
    // The same page clicked again: its version is the one this command's claim answers, a repeat.
    const again = (await (await routes.resubmit.POST(post('/x', { lastMessageId: e.lastMessageId }), ev)).json()) as { outcome: string; messageId: string };
    assert.deepEqual([again.outcome, again.messageId], ['duplicate', r.messageId]);
    const got = await receiveMain(e.endpointId, e.sessionId);
    assert.deepEqual(got.map((m) => m.applicationProperties?.[Prop.MessageType]), [MessageType.ResubmissionRequest], 'one command, the current version\'s');
  });

  test("an edited payload that misses its event type's catalog schema is 400 naming each path, and nothing is sent", async () => {
    const ev = params({ endpointId: 'billingendpoint', eventId: 'evt-dead-1' });
    const res = await routes.resubmit.POST(post('/x', { payload: { orderId: 'ORD-300', total: 'ten' } }), ev);
    assert.equal(res.status, 400);
    const { detail } = (await res.json()) as { detail: string };
    assert.match(detail, /does not match the catalog's JSON schema of OrderPlaced/);
    assert.match(detail, /customerId: required property is missing/);
    assert.match(detail, /total: Invalid input: expected number/);
    assert.doesNotMatch(detail, /ten/, 'values are not echoed');
    const d = (await (await routes.event.GET(get('/x'), ev)).json()) as { event: { status: string }; audits: unknown[] };
    assert.equal(d.event.status, 'DeadLettered', 'nothing claimed');
    assert.deepEqual(d.audits, [], 'nothing audited');
    assert.deepEqual(await receiveMain('billingendpoint', 'ORD-300'), [], 'nothing sent');
    // The chosen event type's schema is the one that counts: OrderCancelled has none, so the same payload gets past
    // the check (to the 409 a Completed event gets).
    const asCancel = await routes.resubmit.POST(
      post('/x', { payload: { orderId: 'ORD-100', total: 'ten' }, eventTypeId: 'OrderCancelled' }),
      params({ endpointId: 'billingendpoint', eventId: 'evt-completed-1' }),
    );
    assert.equal(asCancel.status, 409, await asCancel.clone().text());
  });

  test('an edited resubmission sends the edited payload and records ResubmitWithChanges', async () => {
    const ev = params({ endpointId: 'billingendpoint', eventId: 'evt-dead-1' });
    const edited = { orderId: 'ORD-300', customerId: 'CUST-1', lines: [], total: 0, currency: 'EUR', fixed: true };
    const res = await routes.resubmit.POST(post('/x', { payload: edited }), ev);
    assert.equal(res.status, 200, await res.clone().text());
    const got = await receiveMain('billingendpoint', 'ORD-300');
    assert.equal(got.length, 1);
    const content = decodeBody(got[0]!.body);
    assert.ok(content.ok);
    assert.deepEqual(JSON.parse(content.content.EventContent!.EventJson!), edited);
    const d = (await (await routes.event.GET(get('/x'), ev)).json()) as { event: { payload: unknown }; audits: Array<{ type: string }> };
    assert.deepEqual(d.event.payload, edited);
    assert.equal(d.audits[0]?.type, 'ResubmitWithChanges');
  });

  test("a handoff's result nested deeper than an event payload may be is 400 and settles nothing", async () => {
    // The result becomes the event's content (a later resubmit sends it): the same depth limit as an edited payload.
    const nest = (depth: number): unknown => (depth === 0 ? 1 : [nest(depth - 1)]);
    const coords = params({ endpointId: 'erpendpoint', eventId: 'evt-handoff-1', messageId: seeded.handoff.lastMessageId });
    const deep = await routes.complete.POST(post('/x', { result: nest(33) }), coords);
    assert.equal(deep.status, 400, await deep.clone().text());
    assert.match(((await deep.json()) as { detail: string }).detail, /result: .*deeper than 32 levels/);
    // Far deeper (the call stack of a recursive JSON.stringify): still a 400, not a 500.
    const huge = await routes.complete.POST(post('/x', `{"result":${'['.repeat(200_000)}${']'.repeat(200_000)}}`), coords);
    assert.equal(huge.status, 400, await huge.clone().text());
    // Nothing was claimed or sent: the next test settles this handoff.
  });

  test('handoff settlement: a wrong messageId is 409, a missing errorText 400, the right one is sent', async () => {
    const wrong = await routes.complete.POST(post('/x', { note: 'done' }), params({ endpointId: 'erpendpoint', eventId: 'evt-handoff-1', messageId: 'not-it' }));
    assert.equal(wrong.status, 409);
    const ok = await routes.complete.POST(post('/x', { note: 'imported' }), params({ endpointId: 'erpendpoint', eventId: 'evt-handoff-1', messageId: seeded.handoff.lastMessageId }));
    assert.equal(ok.status, 200, await ok.clone().text());
    const failCoords = params({ endpointId: 'erpendpoint', eventId: 'evt-handoff-2', messageId: seeded.handoff2.lastMessageId });
    assert.equal((await routes.fail.POST(post('/x', {}), failCoords)).status, 400);
    const failed = await routes.fail.POST(post('/x', { errorText: 'Ledger rejected the invoice' }), failCoords);
    assert.equal(failed.status, 200);
    const [completedCmd] = await receiveMain('erpendpoint', 'INV-1');
    assert.equal(completedCmd?.applicationProperties?.[Prop.MessageType], MessageType.HandoffCompletedRequest);
    assert.equal(completedCmd?.applicationProperties?.[Prop.From], 'Manager');
    const [failedCmd] = await receiveMain('erpendpoint', 'INV-2');
    assert.equal(failedCmd?.applicationProperties?.[Prop.MessageType], MessageType.HandoffFailedRequest);
    const body = decodeBody(failedCmd!.body);
    assert.equal(body.content.ErrorContent?.ErrorText, 'Ledger rejected the invoice');
    // Settled once: a second completion of the same handoff is not a pending handoff any more.
    const second = await routes.fail.POST(post('/x', { errorText: 'again' }), params({ endpointId: 'erpendpoint', eventId: 'evt-handoff-1', messageId: seeded.handoff.lastMessageId }));
    assert.equal(second.status, 409);
  });

  test('bulk skip reports one result per event', async () => {
    const res = await routes.bulkSkip.POST(post('/api/event/skip', { endpointId: 'billingendpoint', eventIds: ['evt-completed-1', 'evt-parked-1', 'nope'] }));
    assert.equal(res.status, 200);
    const r = (await res.json()) as { requested: number; sent: number; failed: number; results: Array<{ eventId: string; outcome: string; status?: number }> };
    assert.equal(r.requested, 3);
    assert.equal(r.sent, 0);
    assert.deepEqual(r.results.map((x) => [x.eventId, x.outcome, x.status]), [
      ['evt-completed-1', 'error', 409],
      ['evt-parked-1', 'error', 409],
      ['nope', 'error', 404],
    ]);
    assert.equal((await routes.bulkSkip.POST(post('/api/event/skip', { endpointId: 'billingendpoint', eventIds: [] }))).status, 400);
  });

  test('search finds events by id or session prefix; ready reports both dependencies', async () => {
    const s = (await (await routes.search.GET(get('/api/search?q=ord-2'))).json()) as { items: Array<{ eventId: string }> };
    assert.deepEqual(s.items.map((i) => i.eventId).sort(), ['evt-failed-1', 'evt-parked-1']);
    const ready = await routes.ready.GET();
    assert.equal(ready.status, 200);
    const { checkedAt, ...answer } = (await ready.json()) as Record<string, unknown>;
    assert.deepEqual(answer, { ready: true, cosmos: 'ok', serviceBus: 'ok' });
    assert.equal(typeof checkedAt, 'string');
  });

  test('search trims what is typed and matches the start of the id as stored: an id starting with a space is found only by its other id, which comes back exactly', async () => {
    // Documents search as it is (docs/console.md): the typed text is trimmed (pasted ids carry spaces), so " SPC-SES"
    // is looked up as "SPC-SES", which the stored " SPC-SES" does not start with.
    const at = Date.now() - 30_000;
    const seed = (eventId: string, sessionId: string) =>
      seedEvent(stack.store, at, { endpointId: 'shippingendpoint', eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { eventId } }, MessageType.ResolutionResponse);
    await seed('spc-by-evt', ' SPC-SES');
    await seed(' spc-evt', 'spc-by-ses');
    await seed('blank-ses-evt', '  ');
    type Found = { items: Array<{ endpointId: string; eventId: string; sessionId: string }> };
    const find = async (q: string) => ((await (await routes.search.GET(get(`/api/search?q=${encodeURIComponent(q)}`))).json()) as Found).items;
    assert.deepEqual(await find(' SPC-SES'), [], 'a session id starting with a space is not found by itself');
    assert.deepEqual(await find(' spc-evt'), [], 'nor an event id');
    assert.deepEqual((await find('spc-by-ses')).map((i) => i.eventId), [' spc-evt'], 'found by its session: the event id exactly');
    assert.deepEqual((await find('spc-by-evt')).map((i) => i.sessionId), [' SPC-SES'], 'found by its event id: the session id exactly');
    // A session of spaces alone comes back as it is too; its result says the Endpoint page cannot list it
    // (components/searchLinks.test.ts holds the links to what was found).
    assert.deepEqual((await find('blank-ses-evt')).map((i) => i.sessionId), ['  ']);
  });

  test('search says per list whether it was cut at its limit', async () => {
    // 26 events on one endpoint: one more than a list shows, by event id and by session id alike.
    for (let i = 0; i < 26; i++) {
      await seedEvent(stack.store, Date.now() - 30_000, { endpointId: 'shippingendpoint', eventId: `trunc-evt-${i}`, sessionId: `trunc-ses-${i}`, eventTypeId: 'OrderPlaced', payload: { i } }, MessageType.ResolutionResponse);
    }
    type Lists<T> = { byEventId: T; bySessionId: T };
    type Found = { items: Array<{ eventId: string }>; limit: number; maxPages: number; truncated: Lists<boolean>; scanLimited: Lists<boolean>; shown: Lists<number> };
    const find = async (q: string) => (await (await routes.search.GET(get(`/api/search?q=${q}`))).json()) as Found;

    const byEvent = await find('trunc-evt');
    assert.equal(byEvent.limit, 25);
    assert.equal(byEvent.maxPages, 8);
    assert.equal(byEvent.items.length, 25);
    assert.deepEqual(byEvent.truncated, { byEventId: true, bySessionId: false });
    // Cut at its limit (the embedded Cosmos answers full pages): not stopped by the page cap (server/search.test.ts).
    assert.deepEqual(byEvent.scanLimited, { byEventId: false, bySessionId: false });
    assert.deepEqual(byEvent.shown, { byEventId: 25, bySessionId: 0 });
    const bySession = await find('TRUNC-SES');
    assert.equal(bySession.items.length, 25);
    assert.deepEqual(bySession.truncated, { byEventId: false, bySessionId: true });
    // trunc-evt-1 and trunc-evt-10 … 19: everything that matched is shown.
    const few = await find('trunc-evt-1');
    assert.equal(few.items.length, 11);
    assert.deepEqual(few.truncated, { byEventId: false, bySessionId: false });
    assert.deepEqual((await find('ord-2')).truncated, { byEventId: false, bySessionId: false });
  });

  test('search shows and counts only the rows that parse, reading on past the others', async () => {
    // Rows that no longer parse took places among the 26 read: 20 good rows and 6 unparsable ones said "the first
    // 25" over 20 rows, and 6 unparsable rows ahead of 26 good ones left 20 shown where 25 were due.
    const seedMany = async (prefix: string, n: number) => {
      for (let i = 0; i < n; i++)
        await seedEvent(stack.store, Date.now() - 30_000, { endpointId: 'shippingendpoint', eventId: `${prefix}-${i}`, sessionId: `ses-${prefix}-${i}`, eventTypeId: 'OrderPlaced', payload: { i } }, MessageType.ResolutionResponse);
    };
    await seedMany('spoilt-a', 26);
    await seedMany('spoilt-b', 32);
    // The newest rows of each set are made unparsable (an unknown status), so they come first in the search's order.
    const client = new CosmosClient({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
    try {
      const events = client.database(stack.env.NIMBUS_COSMOS_DATABASE!).container('events');
      const spoil = async (eventId: string, i: number) => {
        const item = events.item(statusRowId(eventId, `ses-${eventId}`), ['shippingendpoint', eventId]);
        const { resource } = await item.read<Record<string, unknown>>();
        assert.ok(resource, eventId);
        await item.replace({ ...resource, status: 'Exploded', updatedAt: new Date(Date.now() + 60_000 + i).toISOString() });
      };
      for (let i = 20; i < 26; i++) await spoil(`spoilt-a-${i}`, i);
      for (let i = 26; i < 32; i++) await spoil(`spoilt-b-${i}`, i);
    } finally {
      client.dispose();
    }
    type Found = { items: Array<{ eventId: string }>; truncated: { byEventId: boolean; bySessionId: boolean } };
    const find = async (q: string) => (await (await routes.search.GET(get(`/api/search?q=${q}`))).json()) as Found;

    const allShown = await find('spoilt-a');
    assert.deepEqual(allShown.items.map((i) => i.eventId).sort(), Array.from({ length: 20 }, (_, i) => `spoilt-a-${i}`).sort());
    assert.deepEqual(allShown.truncated, { byEventId: false, bySessionId: false }, 'every row that parses is shown');
    const cut = await find('spoilt-b');
    assert.deepEqual(cut.items.map((i) => i.eventId).sort(), Array.from({ length: 25 }, (_, i) => `spoilt-b-${i + 1}`).sort(), 'the 25 newest good rows');
    assert.deepEqual(cut.truncated, { byEventId: true, bySessionId: false });
  });
});
