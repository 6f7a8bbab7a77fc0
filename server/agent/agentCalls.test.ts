// The Agent API's route handlers on the embedded stack, sign-in on with sealed session cookies of agent identities
// (roles mapped to Agent on endpoints): what an unauthenticated caller learns from a bad query, whether a call's
// concurrency slot is freed when the console's context fails to open, and whether calls refused for their input
// are audited and counted like every other Agent API call, and whether ids are taken exactly as the agent sent them. (packages/sdk/e2e/agentApi.test.ts: the API over HTTP.)
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { seedConsoleData, seedEvent } from '../testing/seed.ts';
import { MessageType } from '@nimbus/sdk/contract';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { queryAudit } from '../audit/auditLog.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'agent-calls-test-session-secret-0123456789-abcdef';
const AUTH_ENV = oidcTestEnv(SECRET, {
  roles: { 'Ledger.Import': 'Agent:erpendpoint', 'Invoice.Publish': 'Agent:billingendpoint' },
  groups: { 'crm-agents': 'Agent:crmendpoint' },
});

let closeContext: () => Promise<void>;
const stack = useConsoleStack({
  database: 'agentcalls',
  env: AUTH_ENV,
  seed: true,
  prepare: async () => void ({ closeContext } = await import('../context.ts')),
});

/** An agent identity: Agent on erpendpoint, and on crmendpoint too with `both`. */
const agent = (id: string, both = false): Principal => ({ kind: 'user', id: `oid-${id}`, name: `${id}@test`, roles: ['Ledger.Import'], groups: both ? ['crm-agents'] : [] });

function request(who: Principal | null, path: string, body?: unknown): Request {
  const headers: Record<string, string> = { host: '127.0.0.1:3000' };
  if (who) headers.cookie = `${SESSION_COOKIE}=${sealSession(who, { secret: SECRET, maxAgeSeconds: 600 })}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Request(`http://127.0.0.1:3000${path}`, { method: body === undefined ? 'GET' : 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** Runs `fn` with some environment variables set, restoring them after. */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

describe('Agent API calls', () => {
  test('receive: a caller without a token or without Agent rights is refused (401/403) before its query is validated', async () => {
    const receive = await import('../../app/api/agent/receive/route.ts');
    for (const query of ['', '?endpointId=erpendpoint&waitSeconds=999']) {
      const anonymous = await receive.GET(request(null, `/api/agent/receive${query}`));
      assert.equal(anonymous.status, 401, `query '${query}'`);
      assert.doesNotMatch(await anonymous.text(), /waitSeconds|endpointId|invalid query/, 'no schema in the answer');
      const roleless: Principal = { kind: 'user', id: 'oid-roleless', name: 'roleless@test', roles: [], groups: [] };
      const refused = await receive.GET(request(roleless, `/api/agent/receive${query}`));
      assert.equal(refused.status, 403, `query '${query}'`);
      assert.doesNotMatch(await refused.text(), /waitSeconds|invalid query/, 'no schema in the answer');
    }
    // The agent still learns what is wrong with its query.
    const bad = await receive.GET(request(agent('receiver'), '/api/agent/receive?endpointId=erpendpoint&waitSeconds=999'));
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { detail: string }).detail, /waitSeconds/);
  });

  test('calls refused for their input are audited and count against the agent\'s call limit', async () => {
    const receive = await import('../../app/api/agent/receive/route.ts');
    const settle = await import('../../app/api/agent/settle/route.ts');
    const publish = await import('../../app/api/agent/publish/route.ts');
    const catalog = await import('../../app/api/agent/catalog/route.ts');
    const who = agent('bad-input', true);
    // Three calls at once, one a minute: nothing refills during the test however slow the machine.
    await withEnv({ NIMBUS_AGENT_RATE_LIMIT_BURST: '3', NIMBUS_AGENT_RATE_LIMIT_PER_MINUTE: '1' }, async () => {
      const answers = [
        (await settle.POST(request(who, '/api/agent/settle', { endpointId: 'erpendpoint', outcome: 'completed' }))).status,
        // Agent on two endpoints: a publish must name one.
        (await publish.POST(request(who, '/api/agent/publish', { eventTypeId: 'OrderPlaced', payload: { orderId: 'X' } }))).status,
        (await receive.GET(request(who, '/api/agent/receive?endpointId=erpendpoint&waitSeconds=999'))).status,
      ];
      assert.deepEqual(answers, [400, 400, 400]);
      const limited = await catalog.GET(request(who, '/api/agent/catalog'));
      assert.equal(limited.status, 429, 'the bad calls counted against the limit');
    });
    const entries = (await queryAudit(stack.store.database, { user: 'oid-bad-input', pageSize: 20 })).items;
    assert.deepEqual(
      entries.filter((e) => e.status === 400).map((e) => [e.action, e.outcome]).sort(),
      [
        ['agent.publish', 'failed'],
        ['agent.receive', 'failed'],
        ['agent.settle', 'failed'],
      ],
      `audit: ${JSON.stringify(entries.map((e) => [e.action, e.outcome, e.status]))}`,
    );
    assert.match(entries.find((e) => e.action === 'agent.publish')!.reason ?? '', /name endpointId/);
  });

  test('a failed settlement with a note is refused (400), as the operator\'s fail route refuses it, not answered 200 with the note dropped', async () => {
    const settle = await import('../../app/api/agent/settle/route.ts');
    // A handoff of its own (the seeded one is the receive test's), so the old code's 200 is a real settlement.
    const { handoff: h } = await seedConsoleData(stack.store, Date.now() - 60_000, '-agentnote');
    const handoff = { endpointId: 'erpendpoint', eventId: h.eventId, messageId: h.lastMessageId, outcome: 'failed', errorText: 'accounting period is closed' };
    const res = await settle.POST(request(agent('noted'), '/api/agent/settle', { ...handoff, note: 'will retry tomorrow' }));
    const body = await res.text();
    assert.equal(res.status, 400, body);
    assert.match((JSON.parse(body) as { detail: string }).detail, /note: note belongs to a completed outcome/);
  });

  test('ids are taken as the agent sent them: a leading space is part of the id, spaces alone are 400 naming the field', async () => {
    // Agents are programs: " INV-9" trimmed into "INV-9" published into another session than the one named, and
    // " InvoiceIssued" handed out InvoiceIssued handoffs. The one id rule (server/exactIdFilters.ts) instead.
    const receive = await import('../../app/api/agent/receive/route.ts');
    const publish = await import('../../app/api/agent/publish/route.ts');
    const refused = async (res: Response, words: RegExp) => {
      const body = await res.text();
      assert.equal(res.status, 400, body);
      assert.match((JSON.parse(body) as { detail: string }).detail, words);
    };
    const ledger = agent('exact-ids');
    const handedOut = await receive.GET(request(ledger, '/api/agent/receive?endpointId=erpendpoint&eventTypeId=InvoiceIssued'));
    assert.equal(handedOut.status, 200, 'a pending InvoiceIssued handoff (seeded)');
    await refused(await receive.GET(request(ledger, '/api/agent/receive?endpointId=erpendpoint&eventTypeId=%20InvoiceIssued')), /event type " InvoiceIssued" is not in the catalog/);
    await refused(await receive.GET(request(ledger, '/api/agent/receive?endpointId=erpendpoint&eventTypeId=%20%20')), /eventTypeId: an event type id of spaces alone is not a filter/);
    assert.equal((await receive.GET(request(ledger, '/api/agent/receive?endpointId=erpendpoint&eventTypeId='))).status, 200, 'empty is no filter');

    const biller: Principal = { kind: 'user', id: 'oid-exact-biller', name: 'biller@test', roles: ['Invoice.Publish'], groups: [] };
    const invoice = { invoiceId: 'INV-EXACT', orderId: 'ORD-EXACT', amount: 1, currency: 'EUR', dueDate: '2026-12-31' };
    const send = (fields: Record<string, unknown>) =>
      publish.POST(request(biller, '/api/agent/publish', { eventTypeId: 'InvoiceIssued', endpointId: 'billingendpoint', payload: invoice, ...fields }));
    await refused(await send({ sessionId: '  ' }), /sessionId: a session id of spaces alone names nothing/);
    await refused(await send({ sessionId: '' }), /sessionId: a session id is empty/);
    await refused(await send({ eventTypeId: ' InvoiceIssued' }), /billingendpoint does not produce {2}InvoiceIssued/);
    await refused(await send({ eventTypeId: '\t' }), /eventTypeId: an event type id of spaces alone names nothing/);
    const sent = await send({ sessionId: ' INV-EXACT' });
    const published = (await sent.json()) as { sessionId: string };
    assert.equal(sent.status, 200, JSON.stringify(published));
    assert.equal(published.sessionId, ' INV-EXACT', 'published into the session named, not a trimmed one');
    // On the bus: erpendpoint consumes InvoiceIssued, and the message waits in its session " INV-EXACT".
    const receiver = await stack.serviceBus.client.acceptSession('erpendpoint', 'erpendpoint', ' INV-EXACT');
    try {
      const [got] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 30_000 });
      assert.equal(got?.sessionId, ' INV-EXACT');
      await receiver.completeMessage(got!);
    } finally {
      await receiver.close();
    }
  });

  test('receive\'s exclude takes each event id as sent: an excluded " INV-9" is skipped, "INV-9" is still handed out', async () => {
    // Trimmed, excluding " INV-9" excluded "INV-9" and handed " INV-9" - the handoff the agent holds - back to it.
    const receive = await import('../../app/api/agent/receive/route.ts');
    const ledger = agent('exact-exclude');
    // Older than every seeded handoff, " INV-9" first: the two oldest pending handoffs of erpendpoint.
    const old = Date.now() - 3_600_000;
    for (const [eventId, base] of [[' INV-9', old], ['INV-9', old + 60_000]] as const)
      await seedEvent(stack.store, base, { endpointId: 'erpendpoint', eventId, sessionId: `S${eventId}`, eventTypeId: 'InvoiceIssued', payload: { invoiceId: eventId } }, MessageType.PendingHandoffResponse, { handoffReason: 'Ledger import queued' });
    const handedOut = async (exclude: string) => {
      const res = await receive.GET(request(ledger, `/api/agent/receive?endpointId=erpendpoint&exclude=${encodeURIComponent(exclude)}`));
      const body = await res.text();
      assert.equal(res.status, 200, `exclude '${exclude}': ${body}`);
      return (JSON.parse(body) as { eventId: string }).eventId;
    };
    assert.equal(await handedOut(''), ' INV-9', 'nothing excluded: the oldest');
    assert.equal(await handedOut(' INV-9'), 'INV-9', 'the held " INV-9" is skipped, "INV-9" is not');
    assert.equal(await handedOut('INV-9 , INV-9'), 'INV-9', '"INV-9 " names no handoff: "INV-9" is not excluded by it');
    assert.equal(await handedOut('INV-9'), ' INV-9', '"INV-9" excludes "INV-9" alone');
    // An item empty or of spaces alone names no event: refused in the rule's words, not dropped.
    for (const [exclude, words] of [
      ['INV-9,  ', /exclude\.1: an event id of spaces alone names nothing; ids are taken exactly as sent/],
      ['INV-9,,evt-handoff-1', /exclude\.1: an event id is empty/],
      [`INV-9,${'x'.repeat(129)}`, /exclude\.1: an event id longer than 128 characters names nothing/],
      [Array.from({ length: 101 }, (_, i) => `evt-${i}`).join(','), /exclude names at most 100 event ids/],
    ] as const) {
      const res = await receive.GET(request(ledger, `/api/agent/receive?endpointId=erpendpoint&exclude=${encodeURIComponent(exclude)}`));
      const body = await res.text();
      assert.equal(res.status, 400, body);
      assert.match((JSON.parse(body) as { detail: string }).detail, words);
    }
  });

  test('receive\'s excludeId names an event id with a comma in it, whole and exactly as sent; exclude still splits on ","', async () => {
    // exclude=INV,77 excludes "INV" and "77": before, a handoff "INV,77" could not be excluded at all - an agent
    // holding it was handed it back. Each excludeId is one id; both forms together are one list of at most 100.
    const receive = await import('../../app/api/agent/receive/route.ts');
    const ledger = agent('comma-exclude');
    // Older than every other seeded handoff: "INV,77" the oldest pending of erpendpoint, "INV-78" the next.
    const old = Date.now() - 7_200_000;
    for (const [eventId, base] of [['INV,77', old], ['INV-78', old + 60_000]] as const)
      await seedEvent(stack.store, base, { endpointId: 'erpendpoint', eventId, sessionId: `S-${eventId}`, eventTypeId: 'InvoiceIssued', payload: { invoiceId: eventId } }, MessageType.PendingHandoffResponse, { handoffReason: 'Ledger import queued' });
    const answer = async (query: string) => {
      const res = await receive.GET(request(ledger, `/api/agent/receive?endpointId=erpendpoint&${query}`));
      return { status: res.status, body: (await res.json()) as { eventId?: string; detail?: string } };
    };
    const handedOut = async (query: string) => {
      const { status, body } = await answer(query);
      assert.equal(status, 200, `${query}: ${JSON.stringify(body)}`);
      return body.eventId;
    };
    const q = (name: string, ...ids: string[]) => ids.map((id) => `${name}=${encodeURIComponent(id)}`).join('&');
    assert.equal(await handedOut(''), 'INV,77', 'nothing excluded: the oldest');
    assert.equal(await handedOut(q('excludeId', 'INV,77')), 'INV-78', 'excludeId takes "INV,77" whole');
    assert.equal(await handedOut(q('exclude', 'INV,77')), 'INV,77', 'exclude splits it: "INV" and "77" are excluded, not "INV,77"');
    assert.equal(await handedOut(q('excludeId', ' INV,77')), 'INV,77', '" INV,77" names another id: taken as sent, not trimmed');
    const both = [await handedOut(`${q('excludeId', 'INV,77')}&${q('exclude', 'INV-78')}`), await handedOut(q('excludeId', 'INV,77', 'INV-78'))];
    for (const eventId of both) assert.ok(eventId !== 'INV,77' && eventId !== 'INV-78', `both excluded, got ${eventId}`);
    // Refused as exclude's items are, in the rule's words; the two forms share exclude's maximum of 100 ids.
    const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
    for (const [query, words] of [
      [q('excludeId', 'INV,77', ''), /excludeId\.1: an event id is empty/],
      [q('excludeId', '  '), /excludeId\.0: an event id of spaces alone names nothing/],
      [q('excludeId', 'x'.repeat(129)), /excludeId\.0: an event id longer than 128 characters names nothing/],
      [q('excludeId', ...ids(101, 'e')), /excludeId names at most 100 event ids/],
      [`${q('exclude', ids(60, 'a').join(','))}&${q('excludeId', ...ids(41, 'b'))}`, /exclude and excludeId name at most 100 event ids together \(got 101\)/],
    ] as const) {
      const { status, body } = await answer(query);
      assert.equal(status, 400, `${query.slice(0, 60)}: ${JSON.stringify(body)}`);
      assert.match(body.detail ?? '', words);
    }
    assert.notEqual(await handedOut(`${q('exclude', ids(59, 'a').join(','))}&${q('excludeId', ...ids(40, 'b'), 'INV,77')}`), 'INV,77', '100 together are taken');
  });

  test('a call whose console context fails to open frees its slot: the agent is not locked out once the context opens', async () => {
    const catalog = await import('../../app/api/agent/catalog/route.ts');
    // Sign-in off: an anonymous read is authorized without the context, so the context first opens in the call.
    await withEnv({ NIMBUS_AUTH: 'off', NIMBUS_AGENT_MAX_CONCURRENT: '1' }, async () => {
      await closeContext();
      await withEnv({ NIMBUS_CATALOG: '/nonexistent/nimbus-catalog.json' }, async () => {
        for (let i = 0; i < 2; i++) {
          const failed = await catalog.GET(request(null, '/api/agent/catalog'));
          assert.ok(failed.status >= 500, `call ${i}: ${failed.status} ${await failed.clone().text()}`);
        }
      });
      const ok = await catalog.GET(request(null, '/api/agent/catalog'));
      assert.equal(ok.status, 200, await ok.clone().text());
    });
  });
});
