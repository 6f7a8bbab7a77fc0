// The operations pages' route handlers on the embedded stack, called as Next calls them (a web Request and a
// params promise): Topology (overview, dead letters, preview, replay with progress, typed-confirmation actions),
// Operations → Reconcile, Admin → Health and heartbeat settings. Bad input is a 400 with a reason.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Prop } from '@nimbus/sdk/contract';
import { startFaultProxy, type FaultProxy } from '../../lib/store/testing/faultProxy.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { sendAndDeadLetter } from '../testing/resolverDeadLetter.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let stack: ConsoleTestStack;
// The console's store goes through it, so a test can make the store fail for chosen requests.
let proxy: FaultProxy;
let closeAll: () => Promise<void>;

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const url = (path: string) => `http://127.0.0.1${path}`;
const req = (method: string, path: string, body?: unknown) =>
  new Request(url(path), { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });

before(async () => {
  stack = await startConsoleTestStack();
  proxy = await startFaultProxy(stack.cosmos.endpoint);
  Object.assign(process.env, stack.env, { NIMBUS_COSMOS_ENDPOINT: proxy.endpoint });
  const { closeContext } = await import('../context.ts');
  const { closeOpsServices } = await import('../heartbeat/services.ts');
  closeAll = async () => {
    await closeOpsServices();
    await closeContext();
  };
});
after(async () => {
  await closeAll?.();
  await proxy?.close();
  await stack?.close();
});

async function deadLetterOnResolver(): Promise<string> {
  const messageId = randomUUID();
  await sendAndDeadLetter(
    stack.serviceBus.client,
    { messageId, sessionId: `s-${randomUUID()}`, body: Buffer.from('{"EventContent":null}'), applicationProperties: { [Prop.To]: 'Resolver', [Prop.MessageType]: 'ResolutionResponse', [Prop.ThrottleRetryCount]: 9 } },
    { deadLetterReason: 'CosmosDbThrottled', deadLetterErrorDescription: 'throttled' },
  );
  return messageId;
}

describe('operations routes', () => {
  test('topology: overview, dead letters, preview, replay with progress, typed confirmation', async () => {
    const overview = await import('../../app/api/topology/subscriptions/route.ts');
    const dl = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/deadletters/route.ts');
    const preview = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const op = await import('../../app/api/topology/operations/[operationId]/route.ts');
    const actions = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/actions/route.ts');
    const p = params({ topic: 'Resolver', subscription: 'Resolver' });

    const o = await overview.GET(req('GET', '/api/topology/subscriptions'));
    assert.equal(o.status, 200);
    assert.ok(((await o.json()) as { topics: unknown[] }).topics.length > 2);

    const messageId = await deadLetterOnResolver();
    assert.equal((await dl.GET(req('GET', '/api/topology/subscriptions/Resolver/Resolver/deadletters?pageSize=abc'), p)).status, 400);
    const page = (await (await dl.GET(req('GET', '/api/topology/subscriptions/Resolver/Resolver/deadletters?reason=CosmosDbThrottled'), p)).json()) as {
      items: Array<{ messageId: string; replay: unknown }>;
      total: { deadLetter: number; at: string } | null;
    };
    assert.deepEqual(page.items.map((i) => i.messageId), [messageId]);
    assert.equal(page.items[0]!.replay, null, 'no replay has touched it');
    // The queue's total from the broker, this subscription's alone (the page shows it without the whole topology).
    const runtime = await stack.serviceBus.admin.getSubscriptionRuntimeProperties('Resolver', 'Resolver');
    assert.equal(page.total?.deadLetter, runtime.deadLetterMessageCount);
    assert.ok(runtime.deadLetterMessageCount >= 1);
    assert.ok(page.total && !Number.isNaN(Date.parse(page.total.at)));

    assert.equal((await preview.POST(req('POST', '/x', {}), p)).status, 400, 'a selection is required');
    const decisionByFilter = await replay.POST(req('POST', '/x', { all: true, uncertain: 'resend' }), p);
    assert.equal(decisionByFilter.status, 400, 'a decision on uncertain dead letters names them one by one');
    assert.match(((await decisionByFilter.json()) as { detail: string }).detail, /one by one/);
    const pv = (await (await preview.POST(req('POST', '/x', { all: true }), p)).json()) as { count: number; toSend: number; alreadySent: number; uncertain: number };
    assert.deepEqual([pv.count, pv.toSend, pv.alreadySent, pv.uncertain], [1, 1, 0, 0]);

    const started = await replay.POST(req('POST', '/x', { all: true }), p);
    assert.equal(started.status, 202);
    const { operationId } = (await started.json()) as { operationId: string };
    let state = 'running';
    let replayed = 0;
    for (let i = 0; i < 100 && state === 'running'; i++) {
      const r = (await (await op.GET(req('GET', '/x'), params({ operationId }))).json()) as { state: string; replayed: number };
      state = r.state;
      replayed = r.replayed;
      if (state === 'running') await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(state, 'done');
    assert.equal(replayed, 1);
    assert.equal((await op.GET(req('GET', '/x'), params({ operationId: 'nope' }))).status, 400);
    assert.equal((await op.GET(req('GET', '/x'), params({ operationId: randomUUID() }))).status, 404);

    const wrong = await actions.POST(req('POST', '/x', { action: 'purge', confirm: 'resolver' }), p);
    assert.equal(wrong.status, 400);
    // A purge names the topic too: the subscription's name alone ('Resolver', 'Retry') recurs on every topic.
    const nameOnly = await actions.POST(req('POST', '/x', { action: 'purge', confirm: 'Resolver' }), p);
    assert.equal(nameOnly.status, 400, 'the subscription name alone does not confirm a purge');
    assert.match(((await nameOnly.json()) as { detail: string }).detail, /type 'Resolver\/Resolver' \(topic\/subscription\)/);
    const purged = await actions.POST(req('POST', '/x', { action: 'purge', confirm: 'Resolver/Resolver' }), p);
    assert.equal(purged.status, 200);
    assert.deepEqual(await purged.json(), { purged: 0 });
  });

  test('a subscription the broker does not have is a 404 that names it for dead letters, preview, replay and purge', async () => {
    // They answered 500 "internal error" (audited so), and a replay answered 202 before its operation failed with
    // the broker's own text.
    const dl = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/deadletters/route.ts');
    const preview = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const actions = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/actions/route.ts');
    const { queryAudit } = await import('../audit/auditLog.ts');
    const p = params({ topic: 'billingendpoint', subscription: 'nope' });
    const answers = {
      deadletters: await dl.GET(req('GET', '/api/topology/subscriptions/billingendpoint/nope/deadletters'), p),
      preview: await preview.POST(req('POST', '/x', { all: true }), p),
      replay: await replay.POST(req('POST', '/x', { all: true }), p),
      purge: await actions.POST(req('POST', '/x', { action: 'purge', confirm: 'billingendpoint/nope' }), p),
    };
    for (const [what, res] of Object.entries(answers)) {
      const body = (await res.json()) as { error: string; detail: string };
      assert.deepEqual([res.status, body.error, body.detail], [404, 'not found', 'subscription billingendpoint/nope does not exist'], what);
    }
    const audits = (await queryAudit(stack.store.database, { pageSize: 50 })).items.filter((e) => e.status !== null && /billingendpoint\/nope/.test(JSON.stringify(e)));
    assert.ok(audits.length >= 2, `the replay and the purge are audited: ${JSON.stringify(audits)}`);
    assert.ok(audits.every((e) => e.outcome === 'failed' && e.status === 404), JSON.stringify(audits));
  });

  test('a replay whose lease or first record cannot be written is not started: 503, audited as failed, nothing replayed', async () => {
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const op = await import('../../app/api/topology/operations/[operationId]/route.ts');
    const { queryAudit } = await import('../audit/auditLog.ts');
    const { peekDeadLetters } = await import('./deadLetters.ts');
    const p = params({ topic: 'Resolver', subscription: 'Resolver' });
    const messageId = await deadLetterOnResolver();
    const stillThere = async () => (await peekDeadLetters(stack.serviceBus.client, 'Resolver', 'Resolver')).items.some((d) => d.messageId === messageId);
    const failures = async () => (await queryAudit(stack.store.database, { outcome: 'failed', pageSize: 100 })).items.filter((e) => e.status === 503 && /did not start/.test(e.reason ?? ''));

    // The store does not answer for the replay's lease (the lease document's reads fail at the wire), then for the
    // write of the operation record.
    const faults = [
      { step: /lease could not be taken/, match: (r: { path: string }) => r.path.includes('/colls/leases/docs/replay_') },
      { step: /operation record could not be written/, match: (r: { method: string; path: string }) => r.method === 'POST' && /\/colls\/platform\/docs\/?$/.test(r.path) },
    ];
    for (const [i, fault] of faults.entries()) {
      proxy.inject({ status: 503, match: fault.match });
      let started: Response;
      try {
        started = await replay.POST(req('POST', '/x', { all: true }), p);
      } finally {
        proxy.clear();
      }
      const body = (await started.json()) as { error: string; detail: string; operationId?: string };
      assert.equal(started.status, 503, `answered ${started.status} ${JSON.stringify(body)}`);
      assert.equal(body.error, 'unavailable');
      assert.match(body.detail, fault.step);
      assert.match(body.detail, /nothing was replayed/);
      assert.equal((await failures()).length, i + 1, 'audited as a failure with the status the caller got');
      assert.ok(await stillThere(), 'the dead letter was not replayed');
    }

    // Once the store answers, the same request starts, and its record is there as soon as it is answered.
    const started = await replay.POST(req('POST', '/x', { all: true }), p);
    assert.equal(started.status, 202);
    const { operationId } = (await started.json()) as { operationId: string };
    assert.equal((await op.GET(req('GET', '/x'), params({ operationId }))).status, 200, 'the record exists when 202 is answered');
    let r = { state: 'running', messageIds: [] as string[] };
    for (let i = 0; i < 100 && r.state === 'running'; i++) {
      r = (await (await op.GET(req('GET', '/x'), params({ operationId }))).json()) as typeof r;
      if (r.state === 'running') await new Promise((res) => setTimeout(res, 100));
    }
    assert.deepEqual([r.state, r.messageIds], ['done', [messageId]]);
  });

  test("an operation still 'running' but not updated for a minute is reported interrupted", async () => {
    const op = await import('../../app/api/topology/operations/[operationId]/route.ts');
    const { getContext } = await import('../context.ts');
    const { getOpsServices } = await import('../heartbeat/services.ts');
    const { operationDocName, INTERRUPTED_AFTER_MS } = await import('./replay.ts');
    const docs = getOpsServices(await getContext()).docs;
    const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
    const base = {
      kind: 'replay', topic: 'Resolver', subscription: 'Resolver', auditor: 't', replayed: 0, failed: 0, notCompleted: 0, alreadySent: 0, uncertain: 0,
      uncertainSequenceNumbers: [], decision: null, decided: 0, messageIds: [], error: null, startedAt: ago(INTERRUPTED_AFTER_MS * 2), finishedAt: null,
    };
    const read = async (state: string, updatedAt: string) => {
      const id = randomUUID();
      await docs.write(operationDocName(id), { ...base, id, state, updatedAt });
      const r = (await (await op.GET(req('GET', '/x'), params({ operationId: id }))).json()) as { state: string; interrupted: boolean };
      return `${r.state}:${String(r.interrupted)}`;
    };
    assert.equal(await read('running', ago(INTERRUPTED_AFTER_MS + 5000)), 'running:true');
    assert.equal(await read('running', ago(1000)), 'running:false');
    assert.equal(await read('done', ago(INTERRUPTED_AFTER_MS + 5000)), 'done:false', 'a finished operation is never interrupted');
  });

  test('reconcile preview and apply validate their input', async () => {
    const route = await import('../../app/api/operations/reconcile/route.ts');
    const pv = await route.GET(req('GET', '/api/operations/reconcile'));
    assert.equal(pv.status, 200);
    assert.deepEqual(((await pv.json()) as { stale: unknown[] }).stale, []);
    assert.equal((await route.POST(req('POST', '/x', { targets: [] }))).status, 400);
    const r = await route.POST(req('POST', '/x', { targets: [{ endpointId: 'billingendpoint', eventId: 'e', sessionId: 's', rowMessageId: 'm' }] }));
    assert.equal(r.status, 200);
    assert.equal(((await r.json()) as { unchanged: number }).unchanged, 1);
  });

  test('admin: health overview, settings clamped and validated, send now, endpoint toggle', async () => {
    const health = await import('../../app/api/admin/health/route.ts');
    const settings = await import('../../app/api/admin/heartbeat/settings/route.ts');
    const sendNow = await import('../../app/api/admin/heartbeat/send-now/route.ts');
    const toggle = await import('../../app/api/admin/heartbeat/endpoints/[endpointId]/route.ts');
    const h = (await (await health.GET(req('GET', '/x'))).json()) as { settings: { enabled: boolean; version: string }; resolver: { status: string }; endpoints: unknown[] };
    assert.equal(h.settings.enabled, false);
    assert.equal(h.resolver.status, 'Unknown');
    assert.equal(h.endpoints.length, stack.catalog.endpoints.length);
    assert.equal((await settings.PUT(req('PUT', '/x', { intervalSeconds: 'x', version: h.settings.version }))).status, 400);
    const saved = (await (await settings.PUT(req('PUT', '/x', { intervalSeconds: 10, timeoutSeconds: 100, version: h.settings.version }))).json()) as { intervalSeconds: number; timeoutSeconds: number };
    assert.deepEqual([saved.intervalSeconds, saved.timeoutSeconds], [30, 30]);
    assert.equal((await toggle.PUT(req('PUT', '/x', { included: false }), params({ endpointId: 'nope' }))).status, 404);
    assert.equal((await toggle.PUT(req('PUT', '/x', { included: false }), params({ endpointId: 'erpendpoint' }))).status, 200);
    const sent = (await (await sendNow.POST(req('POST', '/x'))).json()) as { count: number };
    assert.equal(sent.count, stack.catalog.endpoints.length - 1);

    // The launcher's way to run the scheduler on the console's connections: its first tick probes the Resolver.
    const { startConsoleHeartbeat } = await import('../heartbeat/services.ts');
    const hb = await startConsoleHeartbeat(process.env, { tickMs: 60_000 });
    try {
      let inFlight = false;
      for (let i = 0; i < 100 && !inFlight; i++) {
        inFlight = ((await (await health.GET(req('GET', '/x'))).json()) as { resolver: { probeInFlight: boolean } }).resolver.probeInFlight;
        if (!inFlight) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(inFlight, 'the Resolver probe went out');
    } finally {
      await hb.stop();
    }
  });

  test('heartbeat settings: two saves from the same version, the second is refused with 409 and nothing of it applied', async () => {
    const health = await import('../../app/api/admin/health/route.ts');
    const settings = await import('../../app/api/admin/heartbeat/settings/route.ts');
    const { queryAudit } = await import('../audit/auditLog.ts');
    type Settings = { enabled: boolean; intervalSeconds: number; timeoutSeconds: number; version: string };
    // The fields a save may change and the version (lastSentAt is the scheduler's, not the operator's).
    const fields = ({ enabled, intervalSeconds, timeoutSeconds, version }: Settings) => ({ enabled, intervalSeconds, timeoutSeconds, version });
    const read = async () => fields(((await (await health.GET(req('GET', '/x'))).json()) as { settings: Settings }).settings);
    const put = (body: object) => settings.PUT(req('PUT', '/x', body));

    const base = await read();
    assert.equal(typeof base.version, 'string');
    // Two Owners read the same version; both change the interval.
    const first = await put({ intervalSeconds: base.intervalSeconds + 60, version: base.version });
    assert.equal(first.status, 200, await first.clone().text());
    const stored = fields((await first.json()) as Settings);
    assert.equal(stored.intervalSeconds, base.intervalSeconds + 60);
    assert.notEqual(stored.version, base.version, 'a save moves the version');
    assert.equal((await read()).version, stored.version, 'the page reads the version the save answered');

    const startedAt = new Date(Date.now() - 1000).toISOString();
    const second = await put({ intervalSeconds: base.intervalSeconds + 120, timeoutSeconds: 40, version: base.version });
    assert.equal(second.status, 409);
    const refusal = (await second.json()) as { error: string; detail: string };
    assert.match(refusal.detail, /changed since you read them.*nothing was applied/);
    const after = await read();
    assert.deepEqual(after, stored, 'nothing of the refused save was applied, not even the field the first did not touch');

    // Refused like any failed change: in the access audit with the status and reason the caller got.
    const audit = await queryAudit(stack.store.database, { action: 'heartbeat.settings', outcome: 'failed', from: startedAt, pageSize: 10 });
    assert.ok(audit.items.some((e) => e.status === 409 && /changed since you read them/.test(e.reason ?? '')), JSON.stringify(audit.items));

    // Without a version: 428, with what to send; also audited, and nothing applied.
    const missing = await put({ timeoutSeconds: 40 });
    assert.equal(missing.status, 428);
    assert.match(((await missing.json()) as { detail: string }).detail, /send `version`/);
    assert.deepEqual(await read(), stored);
    const audit428 = await queryAudit(stack.store.database, { action: 'heartbeat.settings', outcome: 'failed', from: startedAt, pageSize: 10 });
    assert.ok(audit428.items.some((e) => e.status === 428), JSON.stringify(audit428.items));

    // Read again, the same change goes through.
    const retry = await put({ timeoutSeconds: 40, version: after.version });
    assert.equal(retry.status, 200, await retry.clone().text());
    assert.equal(((await retry.json()) as Settings).timeoutSeconds, 40);
    await put({ intervalSeconds: base.intervalSeconds, timeoutSeconds: base.timeoutSeconds, version: (await read()).version });
  });

  test('replays share one no-retry send client per context, closed with the ops services', async () => {
    const replay = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
    const op = await import('../../app/api/topology/operations/[operationId]/route.ts');
    const { getContext } = await import('../context.ts');
    const { closeOpsServices } = await import('../heartbeat/services.ts');
    const { replaySendClientOf } = await import('./routes.ts');
    const ctx = await getContext();
    const client = replaySendClientOf(ctx);
    // Counts the senders opened on the shared client: each replay must send through it.
    let senders = 0;
    const createSender = client.createSender.bind(client);
    client.createSender = ((...args: Parameters<typeof createSender>) => {
      senders++;
      return createSender(...args);
    }) as typeof client.createSender;
    const p = params({ topic: 'Resolver', subscription: 'Resolver' });
    for (let round = 0; round < 2; round++) {
      const messageId = await deadLetterOnResolver();
      const started = await replay.POST(req('POST', '/x', { all: true }), p);
      assert.equal(started.status, 202);
      const { operationId } = (await started.json()) as { operationId: string };
      let r = { state: 'running', messageIds: [] as string[] };
      for (let i = 0; i < 100 && r.state === 'running'; i++) {
        r = (await (await op.GET(req('GET', '/x'), params({ operationId }))).json()) as typeof r;
        if (r.state === 'running') await new Promise((res) => setTimeout(res, 100));
      }
      assert.deepEqual([r.state, r.messageIds], ['done', [messageId]]);
      assert.equal(replaySendClientOf(ctx), client, `replay ${round + 1} left the shared client in place`);
    }
    assert.equal(senders, 2, 'both replays sent on the shared client');
    // Still open after the replays ended: a replay does not close the shared client.
    const sender = createSender('Resolver');
    await sender.close();

    await closeOpsServices();
    await assert.rejects(async () => {
      const s = client.createSender('Resolver');
      await s.sendMessages({ body: 'x' });
    }, 'closing the ops services closed the client');
    assert.notEqual(replaySendClientOf(ctx), client, 'a fresh client after the services were reopened');
  });
});
