// A busy endpoint is not Off. On the embedded stack, a real SDK host for billing with one session worker whose
// handler the test holds open: orders pile up in sessions ahead of the probe's `Heartbeat` session, so the probe
// waits behind them past the timeout while the endpoint keeps answering orders (the real Resolver records those
// answers). The sweep must leave that probe Pending and the overview say "busy", keeping the last On; once the
// endpoint has answered nothing for a whole timeout the probe turns Off; the late answer turns it On again.
// Shipping consumes the same orders but has no host: requests arriving for it are no evidence of life, it is Off.
// The heartbeat clock is injected (a shift on the real clock, which the Resolver stamps the rows with), so "sent
// 21 s ago" needs no waiting.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { HandlerRegistry, Publisher, sessionKeysFromCatalog, SubscriberHost } from '@nimbus/sdk';
import { MessageType as T } from '@nimbus/sdk/contract';
import { TimeSeriesStore } from '../../lib/store/index.ts';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { evaluateRule } from '../alerts/conditions.ts';
import { ruleInputSchema, type RuleDoc } from '../alerts/model.ts';
import { alertSources } from '../alerts/sources.ts';
import { heartbeatsFromOverview } from '../history/background.ts';
import { endpointsOverview } from '../queries.ts';
import { startResolver, type ResolverHandle } from '../../resolver-worker/index.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from './platformDocs.ts';
import { HeartbeatService, type HealthOverview } from './scheduler.ts';
import { endProcessAfterResults } from '../../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for 60 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

process.env.NIMBUS_LOG_LEVEL = 'silent';

const BUSY = 'billingendpoint';
const DEAD = 'shippingendpoint';
const TIMEOUT_SECONDS = 20;

let stack: ConsoleTestStack;
let resolver: ResolverHandle;
let host: SubscriberHost;
let publisher: Publisher;
let docs: PlatformDocs;
let service: HeartbeatService;
/** Added to the real clock for the heartbeat service: negative sends a probe "in the past". */
let shiftMs = 0;

/** Orders the billing handler has started, in order; and the handlers held open, to release one by one. */
const entered: string[] = [];
const held: Array<() => void> = [];
let holding = true;

before(async () => {
  stack = await startConsoleTestStack();
  resolver = startResolver({ client: stack.serviceBus.client, store: stack.store, sessionIdleTimeoutMs: 200, log: pino({ level: 'silent' }) });
  const handlers = new HandlerRegistry().on<{ orderId: string }>('OrderPlaced', async (o) => {
    entered.push(o.orderId);
    if (holding) await new Promise<void>((r) => held.push(r));
  });
  // One worker: sessions are handled one at a time, so the probe's session waits for those ready before it.
  host = new SubscriberHost({ client: stack.serviceBus.client, endpointId: BUSY, handlers, maxConcurrentSessions: 1, sessionIdleTimeoutMs: 200, deferredProcessor: false });
  await host.start();
  publisher = new Publisher({ client: stack.serviceBus.client, endpointId: 'storefrontendpoint', sessionKeys: sessionKeysFromCatalog(stack.catalog) });
  docs = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'nimbus' });
  service = new HeartbeatService({ store: stack.store, client: stack.serviceBus.client, catalog: stack.catalog, docs, now: () => new Date(Date.now() + shiftMs) });
});

after(async () => {
  holding = false;
  for (const release of held.splice(0)) release();
  await publisher?.close().catch(() => undefined);
  await host?.stop().catch(() => undefined);
  await resolver?.stop().catch(() => undefined);
  await service?.close();
  docs?.close();
  await stack?.close();
});

async function until<T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> {
  for (let i = 0; i < 600; i++) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** The shared read model's heartbeat (/api/endpoints: the Endpoints page and Monitor), on the real clock. */
const listed = async (id: string) => (await endpointsOverview(stack.store, stack.catalog)).find((e) => e.endpointId === id)!.heartbeat;

/** "Heartbeat missing for 60 s" over every endpoint, judged at `at` from this service's overview (production mapping). */
async function missingAt(at: Date) {
  const rule: RuleDoc = { ...ruleInputSchema.parse({ name: 'r', type: 'heartbeatMissing', durationSeconds: 60 }), id: 'r', kind: 'rule', createdAt: '', updatedAt: '', updatedBy: '' };
  const src = alertSources({
    database: stack.store.database,
    series: new TimeSeriesStore(stack.store.database),
    admin: stack.serviceBus.admin,
    heartbeats: async () => heartbeatsFromOverview(await service.overview()),
  });
  return evaluateRule(rule, src, at, undefined);
}

const health = async (id: string) => (await service.overview()).endpoints.find((e) => e.endpointId === id)!;
const completed = async (orderId: string) =>
  (await stack.store.listEvents({ endpointId: BUSY, sessionId: orderId, pageSize: 10 })).items.some((r) => r.status === 'Completed');

/** Sends one probe to every included endpoint, stamped `agoMs` in the past. */
async function probeSentAgo(agoMs: number): Promise<void> {
  shiftMs = -agoMs;
  try {
    await service.sendNow('tester');
  } finally {
    shiftMs = 0;
  }
}

describe('heartbeat of a busy endpoint', () => {
  test('a probe queued behind a backlog is busy, not Off, while the endpoint answers; silent for a timeout it is Off; the late answer turns it On', async () => {
    const saved = await service.updateSettings({ enabled: true, intervalSeconds: 30, timeoutSeconds: TIMEOUT_SECONDS }, (await service.versionedSettings()).version, 'tester');
    assert.ok('saved' in saved);

    // A first probe, answered at once (nothing queued yet): billing is On.
    holding = false;
    await probeSentAgo(60_000);
    await until('billing On', async () => (await health(BUSY)).status === 'On');
    holding = true;

    // A backlog: four orders in four sessions; the single worker is held in the first one.
    for (let i = 1; i <= 4; i++) await publisher.publish('OrderPlaced', { orderId: `ORD-BUSY-${i}` });
    await until('the first order in the handler', async () => entered.length === 1);
    // The probe joins the line behind the three waiting sessions; as far as the clock knows it left 21 s ago.
    await probeSentAgo((TIMEOUT_SECONDS + 1) * 1000);

    // The endpoint answers one order (the worker then moves to the next session, still ahead of the probe).
    held.shift()!();
    await until('the first order Completed', () => completed(entered[0]!));
    await until('the worker in the second order', async () => entered.length === 2);

    await service.sweep();
    const busy = await health(BUSY);
    assert.equal(busy.status, 'On', 'an endpoint answering its traffic keeps its last answer, not Off');
    assert.equal(busy.busy, true);
    assert.equal(busy.probeInFlight, true);
    assert.ok(busy.lastHandledAt && Date.parse(busy.lastHandledAt) > Date.now() - TIMEOUT_SECONDS * 1000, `answered recently: ${busy.lastHandledAt}`);
    assert.notEqual(busy.backlog, null);

    // Shipping got the same orders (recorded Pending for it) but nothing answers there: Off.
    await until('the orders recorded for shipping', async () => (await stack.store.listEvents({ endpointId: DEAD, pageSize: 10 })).items.length > 0);
    const dead = await health(DEAD);
    assert.equal(dead.status, 'Off');
    assert.equal(dead.busy, false);

    // The Endpoints page and Monitor read the same: billing On and busy (not the newest record's Pending), shipping Off.
    const busyListed = await listed(BUSY);
    assert.deepEqual(busyListed, { status: 'On', at: busy.lastSeenAt, sdkVersion: busy.sdkVersion, busy: true });
    const deadListed = await listed(DEAD);
    assert.deepEqual({ status: deadListed.status, busy: deadListed.busy }, { status: 'Off', busy: false });

    // "Heartbeat missing for 60 s", a minute after billing's last probe answer: billing is busy, its probe queued,
    // so not missing; shipping never answered and is.
    const lastProbeAnswer = Date.parse(busy.lastSeenAt!);
    const whileBusy = await missingAt(new Date(lastProbeAnswer + 61_000));
    assert.equal(whileBusy.status, 'firing', JSON.stringify(whileBusy));
    assert.ok(whileBusy.status === 'firing' && whileBusy.summary.includes(DEAD) && !whileBusy.summary.includes(BUSY), JSON.stringify(whileBusy));

    // 25 s later by the clock billing has answered nothing for a whole timeout: the same probe turns Off.
    shiftMs = 25_000;
    await service.sweep();
    const quiet: HealthOverview['endpoints'][number] = await health(BUSY);
    // Silent for a timeout, billing is missing too.
    const whenSilent = await missingAt(new Date(lastProbeAnswer + 61_000));
    shiftMs = 0;
    assert.equal(quiet.status, 'Off');
    assert.equal(quiet.busy, false);
    assert.ok(whenSilent.status === 'firing' && whenSilent.summary.includes(BUSY), JSON.stringify(whenSilent));
    assert.deepEqual({ status: (await listed(BUSY)).status, busy: (await listed(BUSY)).busy }, { status: 'Off', busy: false });

    // The backlog drains and the probe is answered: late, and On again at once.
    holding = false;
    for (const release of held.splice(0)) release();
    const answered = await until('billing On again', async () => {
      const h = await health(BUSY);
      return h.status === 'On' ? h : undefined;
    });
    assert.equal(answered.probeInFlight, false);
    assert.equal(answered.busy, false);
    assert.equal(answered.answeredLate, true);
    assert.deepEqual({ status: (await listed(BUSY)).status, busy: (await listed(BUSY)).busy }, { status: 'On', busy: false });
    assert.ok(answered.roundTripMs! > TIMEOUT_SECONDS * 1000, `round trip ${answered.roundTripMs} ms`);
    for (let i = 1; i <= 4; i++) assert.ok(await completed(`ORD-BUSY-${i}`), `ORD-BUSY-${i}`);
  });

  test('an answer recorded now but given long ago is no evidence: a dead endpoint whose old answers are written late is Off', async () => {
    // What a Resolver catching up on a backlog writes (and, with the time of writing, what the Manager's and
    // Reconcile's restores write): a response row for shipping, stored now, whose answer the broker took 10 min ago.
    const request = msg(T.EventRequest, { endpointId: DEAD, eventId: 'ORD-LATE-1', sessionId: 'ORD-LATE-1', eventTypeId: 'OrderPlaced', payload: {} });
    const enqueuedAt = new Date(Date.now() - 600_000).toISOString();
    const answer = msg(T.ErrorResponse, { endpointId: DEAD, eventId: 'ORD-LATE-1', sessionId: 'ORD-LATE-1', parentMessageId: request.messageId, errorType: 'Late', errorText: 'recorded late' });
    for (const m of [request, answer]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt } as never, status: { ...m, enqueuedAt } });

    await probeSentAgo((TIMEOUT_SECONDS + 1) * 1000);
    await service.sweep();
    const dead = await health(DEAD);
    assert.equal(dead.busy, false, `no answer since the probe left: ${JSON.stringify(dead)}`);
    assert.equal(dead.status, 'Off');
  });
});
