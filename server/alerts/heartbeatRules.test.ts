// The "heartbeat missing for T" and "Resolver liveness" alert rules driven by real heartbeat data (issue 16): the
// console's own heartbeat service (getOpsServices, the one the background evaluator reads) on the embedded Cosmos
// and Service Bus emulator, the real Resolver answering its liveness probe and recording replies, and a real SDK
// host answering for billingendpoint. The sources are built with the production overview mapping (heartbeatsOf),
// so a change in the overview's shape or in what lastSeenAt means breaks this test, not just the stand-in ones
// in alerts.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createSubscriberHost, HandlerRegistry, type SubscriberHost } from '@nimbus/sdk';
import { TimeSeriesStore } from '../../lib/store/index.ts';
import { startResolver, type ResolverHandle } from '../../resolver-worker/index.ts';
import { closeContext, getContext, type ConsoleContext } from '../context.ts';
import { closeOpsServices, getOpsServices } from '../heartbeat/services.ts';
import { heartbeatsOf } from '../history/background.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { evaluateRule, type AlertSources } from './conditions.ts';
import { ruleInputSchema, type RuleDoc } from './model.ts';
import { alertSources } from './sources.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';
import { endProcessAfterResults } from '../../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for 60 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

let stack: ConsoleTestStack;
let ctx: ConsoleContext;
let resolver: ResolverHandle;
let host: SubscriberHost;

const answering = 'billingendpoint';
const T = 120; // seconds

before(async () => {
  stack = await startConsoleTestStack();
  ctx = await getContext(stack.env);
  resolver = startResolver({ client: stack.serviceBus.client, store: stack.store, sessionIdleTimeoutMs: 200 });
  host = createSubscriberHost({ client: stack.serviceBus.client, endpointId: answering, handlers: new HandlerRegistry(), sessionIdleTimeoutMs: 200, maxConcurrentSessions: 1 });
  await host.start();
});
after(async () => {
  await host?.stop().catch(() => undefined);
  await resolver?.stop().catch(() => undefined);
  await closeOpsServices().catch(() => undefined);
  await closeContext().catch(() => undefined);
  await stack?.close();
});

function rule(input: Record<string, unknown>): RuleDoc {
  return { ...ruleInputSchema.parse({ name: 'r', ...input }), id: 'r', kind: 'rule', createdAt: '', updatedAt: '', updatedBy: '' };
}

function sources(): AlertSources {
  return alertSources({
    database: ctx.store.database,
    series: new TimeSeriesStore(ctx.store.database),
    admin: ctx.serviceBus.admin,
    heartbeats: () => heartbeatsOf(ctx),
  });
}

describe('heartbeat alert rules on real heartbeat data', () => {
  test('heartbeat missing and Resolver liveness: ok right after the answers, firing T + 1 s after lastSeenAt, unavailable with heartbeats off', async () => {
    const service = getOpsServices(ctx).heartbeat;
    await service.updateSettings({ enabled: true, intervalSeconds: 60, timeoutSeconds: 20 }, (await service.versionedSettings()).version, 'tester');
    // Send now probes the endpoints; the tick probes the Resolver (its liveness probe is on the scheduler's claim).
    const sent = await service.sendNow('tester');
    assert.equal(sent.count, ctx.catalog.endpoints.length);
    const tick = await service.tick();
    assert.equal(tick.resolverProbed, true);

    await waitFor('the endpoint and the Resolver recorded as seen', async () => {
      const o = await service.overview();
      return o.resolver.lastSeenAt !== null && o.endpoints.find((e) => e.endpointId === answering)?.lastSeenAt != null;
    });
    // The times are read from the overview itself (what Admin → Health shows), not through the mapping under test.
    const overview = await service.overview();
    const endpointSeen = overview.endpoints.find((e) => e.endpointId === answering)!.lastSeenAt!;
    const resolverSeen = overview.resolver.lastSeenAt!;
    const hb = await heartbeatsOf(ctx);
    assert.equal(hb.enabled, true);
    assert.ok(!Number.isNaN(Date.parse(endpointSeen)) && !Number.isNaN(Date.parse(resolverSeen)), 'lastSeenAt values are timestamps');
    // The silent endpoints (no host) were probed but never answered.
    const silent = hb.endpoints.filter((e) => e.endpointId !== answering);
    assert.ok(silent.length > 0 && silent.every((e) => e.included && e.lastSeenAt === null));

    const src = sources();
    const now = new Date();
    const missing = rule({ type: 'heartbeatMissing', endpointId: answering, durationSeconds: T });
    const liveness = rule({ type: 'resolverLiveness', durationSeconds: T });

    // Right after the answers: both healthy.
    const okHb = await evaluateRule(missing, src, now, undefined);
    assert.equal(okHb.status, 'ok', JSON.stringify(okHb));
    const okRes = await evaluateRule(liveness, src, now, undefined);
    assert.equal(okRes.status, 'ok', JSON.stringify(okRes));

    // At exactly T after the last answer: still ok (the limit is "more than T"). This also pins the mapping to the
    // last answer: the probe's send time is earlier, so judging by it would already fire here.
    const edgeHb = await evaluateRule(missing, src, new Date(Date.parse(endpointSeen) + T * 1000), undefined);
    assert.equal(edgeHb.status, 'ok', JSON.stringify(edgeHb));
    const edgeRes = await evaluateRule(liveness, src, new Date(Date.parse(resolverSeen) + T * 1000), undefined);
    assert.deepEqual(edgeRes, { status: 'ok', value: T });

    // T + 1 s after the last answer: firing, naming who is silent, linking to Admin → Health.
    const lateHb = await evaluateRule(missing, src, new Date(Date.parse(endpointSeen) + T * 1000 + 1000), undefined);
    assert.equal(lateHb.status, 'firing', JSON.stringify(lateHb));
    if (lateHb.status !== 'firing') return;
    assert.equal(lateHb.value, 1);
    assert.match(lateHb.summary, new RegExp(`no heartbeat for more than 2 min from ${answering}$`));
    assert.equal(lateHb.link, '/admin/health');

    const lateRes = await evaluateRule(liveness, src, new Date(Date.parse(resolverSeen) + T * 1000 + 1000), undefined);
    assert.equal(lateRes.status, 'firing', JSON.stringify(lateRes));
    if (lateRes.status !== 'firing') return;
    assert.equal(lateRes.value, T + 1);
    assert.match(lateRes.summary, /^the Resolver last answered its liveness probe 2 min ago \(limit 2 min\)$/);
    assert.equal(lateRes.link, '/admin/health');

    // A rule over every endpoint fires now for the never-answering ones only, not for the one that answered.
    const all = await evaluateRule(rule({ type: 'heartbeatMissing', durationSeconds: T }), src, now, undefined);
    assert.equal(all.status, 'firing', JSON.stringify(all));
    if (all.status !== 'firing') return;
    assert.equal(all.value, silent.length);
    for (const e of silent) assert.ok(all.summary.includes(e.endpointId), e.endpointId);
    assert.ok(!all.summary.includes(answering), 'the answering endpoint is not named');

    // An excluded endpoint is not reported missing.
    await service.setIncluded(silent[0]!.endpointId, false, 'tester');
    const afterExclude = await evaluateRule(rule({ type: 'heartbeatMissing', durationSeconds: T }), src, now, undefined);
    assert.equal(afterExclude.status === 'firing' ? afterExclude.value : 0, silent.length - 1);
    assert.ok(afterExclude.status !== 'firing' || !afterExclude.summary.includes(silent[0]!.endpointId));

    // Heartbeats off: the endpoint rule cannot be evaluated (and says why); the Resolver is still probed and judged.
    await service.updateSettings({ enabled: false, intervalSeconds: 60, timeoutSeconds: 20 }, (await service.versionedSettings()).version, 'tester');
    const off = await evaluateRule(missing, src, now, undefined);
    assert.deepEqual(off, { status: 'unavailable', reason: 'endpoint heartbeats are off (Admin → Health)' });
    assert.equal((await evaluateRule(liveness, src, now, undefined)).status, 'ok');
  });
});
