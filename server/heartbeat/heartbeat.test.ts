// The heartbeat scheduler end to end on the embedded stack: the real Resolver records the replies, a real SDK
// host answers for one endpoint, a pre-heartbeat endpoint answers UnsupportedResponse, the rest never answer.
// Two scheduler instances share the store and tick together: one probe per endpoint per interval. The clock is
// injected, so "after the timeout" needs no waiting.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventBody, HEARTBEAT_EVENT_TYPE_ID, MessageType, Prop, WellKnownSession } from '@nimbus/sdk/contract';
import { createSubscriberHost, HandlerRegistry, SDK_VERSION, type SubscriberHost } from '@nimbus/sdk';
import { startResolver, type ResolverHandle } from '../../resolver-worker/index.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from './platformDocs.ts';
import { ADMIN_AUDIT_EVENT, clampSettings, endpointHealth, HeartbeatService, startHeartbeatScheduler, type HealthOverview } from './scheduler.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';
import { endProcessAfterResults } from '../../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for 60 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

let stack: ConsoleTestStack;
let resolver: ResolverHandle;
let host: SubscriberHost;
const docs: PlatformDocs[] = [];
let clock = Date.now();
const now = () => new Date(clock);

const current = 'billingendpoint';
const old = 'crmendpoint';

before(async () => {
  stack = await startConsoleTestStack();
  resolver = startResolver({ client: stack.serviceBus.client, store: stack.store, sessionIdleTimeoutMs: 200 });
  host = createSubscriberHost({ client: stack.serviceBus.client, endpointId: current, handlers: new HandlerRegistry(), sessionIdleTimeoutMs: 200, maxConcurrentSessions: 1 });
  await host.start();
});
after(async () => {
  await host?.stop().catch(() => undefined);
  await resolver?.stop().catch(() => undefined);
  for (const d of docs) d.close();
  await stack?.close();
});

function service(): HeartbeatService {
  const d = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'nimbus' });
  docs.push(d);
  return new HeartbeatService({ store: stack.store, client: stack.serviceBus.client, catalog: stack.catalog, docs: d, now });
}

/** An endpoint on an SDK from before heartbeats: it has no handler for the probe and says so. */
async function answerAsOldSdk(): Promise<void> {
  const receiver = await stack.serviceBus.client.acceptSession(old, old, WellKnownSession.Heartbeat);
  const sender = stack.serviceBus.client.createSender(old);
  try {
    const [probe] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10_000 });
    assert.ok(probe, 'the old endpoint received a probe');
    await sender.sendMessages({
      messageId: `reply-${String(probe.messageId)}`,
      correlationId: probe.correlationId,
      sessionId: WellKnownSession.Heartbeat,
      body: Buffer.from(eventBody(HEARTBEAT_EVENT_TYPE_ID, {})),
      applicationProperties: {
        [Prop.To]: 'Resolver',
        [Prop.MessageType]: MessageType.UnsupportedResponse,
        [Prop.EventId]: String(probe.applicationProperties?.[Prop.EventId]),
        [Prop.EventTypeId]: HEARTBEAT_EVENT_TYPE_ID,
        [Prop.ParentMessageId]: String(probe.messageId),
      },
    });
    await receiver.completeMessage(probe);
  } finally {
    await sender.close();
    await receiver.close();
  }
}

const byId = (o: HealthOverview, id: string) => o.endpoints.find((e) => e.endpointId === id)!;

describe('heartbeat', () => {
  test('settings are clamped: interval at least 30 s, timeout between 5 s and the interval', () => {
    assert.deepEqual(clampSettings({ enabled: true, intervalSeconds: 10, timeoutSeconds: 1 }), { enabled: true, intervalSeconds: 30, timeoutSeconds: 5 });
    assert.deepEqual(clampSettings({ enabled: false, intervalSeconds: 300, timeoutSeconds: 900 }), { enabled: false, intervalSeconds: 300, timeoutSeconds: 300 });
  });

  test('Pending never masks the last settled status; a never-seen endpoint is Unknown', () => {
    const rec = (probeId: string, status: 'On' | 'Pending' | 'Off', sentAt: string) =>
      ({ id: probeId, endpointId: 'e', probeId, status, sentAt, receivedAt: status === 'On' ? sentAt : null, answeredAt: status === 'On' ? sentAt : null, sdkVersion: status === 'On' ? '1.0.0' : null, intervalSeconds: 60, updatedAt: sentAt });
    const h = endpointHealth('e', true, [rec('2', 'Pending', '2026-12-02T10:01:00.000Z'), rec('1', 'On', '2026-12-02T10:00:00.000Z')]);
    assert.equal(h.status, 'On');
    assert.equal(h.probeInFlight, true);
    assert.equal(h.sdkVersion, '1.0.0');
    assert.equal(endpointHealth('e', true, []).status, 'Unknown');
  });

  test('an overdue probe is busy only while the endpoint answered something after it and within the timeout; a slow answer is late', () => {
    const at = (s: number) => new Date(Date.parse('2026-12-02T10:00:00.000Z') + s * 1000).toISOString();
    const rec = (probeId: string, status: 'On' | 'Pending', sent: number, answered?: number) =>
      ({ id: probeId, endpointId: 'e', probeId, status, sentAt: at(sent), receivedAt: null, answeredAt: answered === undefined ? null : at(answered), sdkVersion: null, intervalSeconds: 60, updatedAt: at(answered ?? sent) });
    const records = [rec('2', 'Pending', 100), rec('1', 'On', 0, 2)];
    const ctx = (now: number, handled: number | null) => ({ nowMs: Date.parse(at(now)), timeoutSeconds: 20, lastHandledAt: handled === null ? null : at(handled), backlog: 7 });
    const busy = endpointHealth('e', true, records, ctx(125, 118));
    assert.deepEqual([busy.status, busy.busy, busy.backlog, busy.answeredLate], ['On', true, 7, false]);
    // Not overdue yet: not busy, whatever the endpoint did.
    assert.equal(endpointHealth('e', true, records, ctx(110, 108)).busy, false);
    // Its last answer is from before the probe left, or older than the timeout: no evidence.
    assert.equal(endpointHealth('e', true, records, ctx(125, 99)).busy, false);
    assert.equal(endpointHealth('e', true, records, ctx(140, 110)).busy, false);
    assert.equal(endpointHealth('e', true, records, ctx(125, null)).busy, false);
    assert.equal(endpointHealth('e', true, records, ctx(140, 110)).backlog, null);
    // Answered 25 s after it was sent, with a 20 s timeout: late.
    assert.equal(endpointHealth('e', true, [rec('3', 'On', 100, 125)], ctx(130, null)).answeredLate, true);
  });

  test('a busy endpoint stays busy when the next probe goes out behind the one still queued', () => {
    const at = (s: number) => new Date(Date.parse('2026-12-02T10:00:00.000Z') + s * 1000).toISOString();
    const rec = (probeId: string, status: 'On' | 'Pending', sent: number, answered?: number) =>
      ({ id: probeId, endpointId: 'e', probeId, status, sentAt: at(sent), receivedAt: null, answeredAt: answered === undefined ? null : at(answered), sdkVersion: null, intervalSeconds: 60, updatedAt: at(answered ?? sent) });
    const ctx = (now: number, handled: number) => ({ nowMs: Date.parse(at(now)), timeoutSeconds: 20, lastHandledAt: at(handled), backlog: 7 });
    // Probe 2 (sent at 100) waits behind the backlog; probe 3 went out at 160, not overdue yet at 170.
    const records = [rec('3', 'Pending', 160), rec('2', 'Pending', 100), rec('1', 'On', 0, 2)];
    assert.equal(endpointHealth('e', true, records, ctx(170, 168)).busy, true);
    // A probe queued before the last answered one says nothing about now.
    assert.equal(endpointHealth('e', true, [rec('3', 'Pending', 160), rec('2', 'On', 100, 150), rec('1', 'Pending', 50)], ctx(170, 168)).busy, false);
  });

  test('off by default; two schedulers send one probe per endpoint per interval; answers give On and Unsupported; silence turns Off', async () => {
    const a = service();
    const b = service();
    const defaults = await a.settings();
    assert.equal(defaults.enabled, false);
    assert.equal(defaults.intervalSeconds, 300);
    assert.equal(defaults.timeoutSeconds, 60);

    // Disabled: no endpoint probe, but the Resolver is probed.
    const idle = await a.tick();
    assert.equal(idle.sent, 0);
    assert.equal(idle.resolverProbed, true);
    await waitFor('the Resolver liveness', async () => (await a.overview()).resolver.status === 'On');

    const r = await a.updateSettings({ enabled: true, intervalSeconds: 60, timeoutSeconds: 20 }, (await a.versionedSettings()).version, 'tester');
    assert.ok('saved' in r, 'saved from the version just read');
    assert.deepEqual([r.saved.enabled, r.saved.intervalSeconds, r.saved.timeoutSeconds], [true, 60, 20]);
    const endpoints = stack.catalog.endpoints.map((e) => e.id);

    const [ta, tb] = await Promise.all([a.tick(), b.tick()]);
    assert.equal(ta.sent + tb.sent, endpoints.length, 'one instance sent one probe per endpoint');
    assert.ok(ta.sent === 0 || tb.sent === 0, 'the other instance sent nothing');
    for (const ep of endpoints) assert.equal((await stack.store.listHeartbeats(ep)).length, 1, ep);

    await answerAsOldSdk();
    await waitFor('On and Unsupported', async () => {
      const o = await a.overview();
      return byId(o, current).status === 'On' && byId(o, old).status === 'Unsupported';
    });
    const o1 = await a.overview();
    assert.equal(byId(o1, current).sdkVersion, SDK_VERSION);
    assert.notEqual(byId(o1, current).roundTripMs, null);
    assert.equal(byId(o1, old).sdkVersion, null, 'a pre-heartbeat SDK reports no version');
    assert.equal(byId(o1, 'erpendpoint').status, 'Pending');

    // Within the interval nobody sends again.
    clock += 30_000;
    const [a2, b2] = await Promise.all([a.tick(), b.tick()]);
    assert.equal(a2.sent + b2.sent, 0);
    for (const ep of endpoints) assert.equal((await stack.store.listHeartbeats(ep)).length, 1, ep);

    // Past the timeout (and the interval): the silent ones turn Off, and the next round goes out once.
    clock += 31_000;
    const [a3, b3] = await Promise.all([a.tick(), b.tick()]);
    assert.equal(a3.sent + b3.sent, endpoints.length);
    const o2 = await a.overview();
    for (const ep of ['erpendpoint', 'shippingendpoint', 'storefrontendpoint']) assert.equal(byId(o2, ep).status, 'Off', ep);
    // On whether or not the new probe is answered yet: a Pending probe never masks the last answer.
    assert.equal(byId(o2, current).status, 'On');
    for (const ep of endpoints) assert.equal((await stack.store.listHeartbeats(ep)).length, 2, ep);

    const audits = await stack.store.listAudits(ADMIN_AUDIT_EVENT, { pageSize: 50 });
    assert.ok(audits.items.some((x) => x.type === 'UpdateHeartbeatSettings'));
  });

  test('an excluded endpoint gets no probe; Send now probes the included ones and is audited', async () => {
    const s = service();
    await s.setIncluded('erpendpoint', false, 'tester');
    const before = (await stack.store.listHeartbeats('erpendpoint', 50)).length;
    const beforeShipping = (await stack.store.listHeartbeats('shippingendpoint', 50)).length;
    const r = await s.sendNow('tester');
    assert.equal(r.count, stack.catalog.endpoints.length - 1);
    assert.equal((await stack.store.listHeartbeats('erpendpoint', 50)).length, before);
    assert.equal((await stack.store.listHeartbeats('shippingendpoint', 50)).length, beforeShipping + 1);
    assert.equal(byId(await s.overview(), 'erpendpoint').included, false);
    await s.setIncluded('erpendpoint', true, 'tester');
    assert.equal(byId(await s.overview(), 'erpendpoint').included, true);
    const types = (await stack.store.listAudits(ADMIN_AUDIT_EVENT, { pageSize: 50 })).items.map((x) => x.type);
    for (const t of ['DisableEndpointHeartbeat', 'EnableEndpointHeartbeat', 'SendHeartbeatNow']) assert.ok(types.includes(t), t);
    await s.close();
  });

  test('startHeartbeatScheduler ticks at once, keeps ticking, and stop() waits for the running tick and ends the timer', async () => {
    const d = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'nimbus' });
    docs.push(d);
    clock += 120_000;
    const before = (await stack.store.listHeartbeats('shippingendpoint', 50)).length;
    const scheduler = startHeartbeatScheduler({ store: stack.store, client: stack.serviceBus.client, catalog: stack.catalog, docs: d, now, tickMs: 20 });
    // Observe every tick (the first one is on a 0 ms timer, so wrapping right after the start catches it too).
    const events: string[] = [];
    let ticks = 0;
    let gate: Promise<void> | undefined = undefined;
    let entered: (() => void) | undefined;
    const realTick = scheduler.service.tick.bind(scheduler.service);
    scheduler.service.tick = async () => {
      ticks++;
      const held = gate; // decided as the tick starts: a tick already running when the gate is set is not held
      if (held) {
        entered?.();
        await held;
      }
      try {
        return await realTick();
      } finally {
        if (held) events.push('tick ended');
      }
    };
    await waitFor('the first scheduled round', async () => (await stack.store.listHeartbeats('shippingendpoint', 50)).length > before);
    // Not only the first tick: the timer is re-armed after each one.
    await waitFor('three ticks', async () => ticks >= 3);

    // Hold the next tick open and stop meanwhile: stop() must not return before that tick has ended.
    let release!: () => void;
    gate = new Promise<void>((r) => (release = r));
    await new Promise<void>((r) => (entered = r));
    const stopping = scheduler.stop().then(() => events.push('stopped'));
    // A positive signal that stop() is really waiting: a round trip to the store finishes while it is pending.
    await stack.store.getAllCounts();
    assert.deepEqual(events, [], 'stop() returned while a tick was still running');
    release();
    await stopping;
    assert.deepEqual(events, ['tick ended', 'stopped']);

    // Nothing ticks after stop(). The positive signal that enough time has passed: a second scheduler on the same
    // period, started now, ticks five times meanwhile.
    const ticksAtStop = ticks;
    const witness = startHeartbeatScheduler({ store: stack.store, client: stack.serviceBus.client, catalog: stack.catalog, docs: d, now, tickMs: 20 });
    let witnessed = 0;
    witness.service.tick = async () => {
      witnessed++;
      return { swept: 0, resolverProbed: false, sent: 0 };
    };
    await waitFor('five ticks of a second scheduler', async () => witnessed >= 5);
    await witness.stop();
    assert.equal(ticks, ticksAtStop, 'the stopped scheduler ticked again');
  });
});
