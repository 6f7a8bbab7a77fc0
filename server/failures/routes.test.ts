// The failure-group and operations routes on the embedded stack (real clients, the route handlers as Next calls
// them): a group's note is shown to everyone in GET /api/failure-groups and is in the audit log with its text;
// a dead-letter replay (Topology → Subscriptions) is listed by GET /api/operations beside the bulk jobs; a job is
// audited when created (who, selection, frozen count) and when finished (counts), each event's audit naming it;
// the export streams the group's rows as a file named after the filter; NIMBUS_OPERATIONS_RATE is checked.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, MessageType as T, Prop, Topic } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { operationsConcurrency, operationsRate } from '../operations/service.ts';
import { replayDeadLetters } from '../subscriptions/replay.ts';
import { ReplayJournal } from '../subscriptions/replayJournal.ts';
import { routeRequest as req, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { sendAndDeadLetter } from '../testing/resolverDeadLetter.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
let stack: ConsoleTestStack;

before(async () => {
  stack = await startRouteTestStack('failureroutes');
});
after(() => stack?.close());

interface GroupsBody {
  groups: Array<{ groupId: string; count: number; note: { note: string; by: string } | null; spark: number[] }>;
}

describe('failure-group and operations routes', () => {
  test("a group's note is shown to everyone and audited with its text", { timeout: 120_000 }, async () => {
    for (let i = 0; i < 3; i++) {
      const request = msg(T.EventRequest, { endpointId: 'crmendpoint', eventId: `note-${i}`, eventTypeId: 'OrderPlaced', payload: { i } });
      await stack.store.writeStatus(request);
      await stack.store.writeStatus(msg(T.ErrorResponse, { endpointId: 'crmendpoint', eventId: `note-${i}`, parentMessageId: request.messageId, errorType: 'CrmUnavailableError', errorText: `CRM API answered 503 while adding order ORD-${i}` }));
    }
    const groupsRoute = await import('../../app/api/failure-groups/route.ts');
    const noteRoute = await import('../../app/api/failure-groups/[groupId]/note/route.ts');
    const first = (await (await groupsRoute.GET(req('GET', '/api/failure-groups'))).json()) as GroupsBody;
    const group = first.groups[0]!;
    assert.equal(group.count, 3);
    assert.equal(group.note, null);
    assert.equal(group.spark.reduce((a, b) => a + b, 0), 3, 'the three arrivals are in the spark');

    const params = { params: Promise.resolve({ groupId: group.groupId }) };
    const text = 'known: CRM maintenance until 10:00';
    const put = await noteRoute.PUT(req('PUT', `/api/failure-groups/${group.groupId}/note`, { note: text }), params);
    assert.equal(put.status, 200, await put.clone().text());
    const shown = (await (await groupsRoute.GET(req('GET', '/api/failure-groups'))).json()) as GroupsBody;
    assert.equal(shown.groups[0]!.note?.note, text);

    const audit = await queryAudit(stack.store.database, { action: 'failures.note', pageSize: 10 });
    const entry = audit.items.find((a) => a.target === `failure-group/${group.groupId}`);
    assert.ok(entry, JSON.stringify(audit.items));
    assert.equal(entry.outcome, 'succeeded');
    assert.equal((entry.details as { note?: string } | null)?.note, text);

    // Bad input is a 400 with a message; an empty text clears the note.
    const bad = await noteRoute.PUT(req('PUT', `/api/failure-groups/${group.groupId}/note`, { note: 'x'.repeat(501) }), params);
    assert.equal(bad.status, 400);
    await noteRoute.PUT(req('PUT', `/api/failure-groups/${group.groupId}/note`, { note: '' }), params);
    const cleared = (await (await groupsRoute.GET(req('GET', '/api/failure-groups'))).json()) as GroupsBody;
    assert.equal(cleared.groups[0]!.note, null);
  });

  test('GET /api/operations lists dead-letter replays beside the bulk jobs', { timeout: 120_000 }, async () => {
    // A Resolver dead letter, replayed as Topology → Subscriptions does.
    await sendAndDeadLetter(
      stack.serviceBus.client,
      {
        messageId: randomUUID(),
        sessionId: `s-${randomUUID()}`,
        body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-1' })),
        applicationProperties: { [Prop.To]: 'billingendpoint', [Prop.From]: 'storefrontendpoint', [Prop.MessageType]: 'ResolutionResponse', [Prop.EventId]: randomUUID() },
      },
      { deadLetterReason: 'CosmosDbThrottled', deadLetterErrorDescription: 'throttled' },
    );
    const docs = new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! });
    try {
      const op = await replayDeadLetters(
        { client: stack.serviceBus.client, store: stack.store, journal: new ReplayJournal(stack.store.database), docs },
        { topic: Topic.Resolver, subscription: Topic.Resolver, selection: { all: true, reason: 'CosmosDbThrottled' }, auditor: 'tester' },
      );
      assert.equal(op.replayed, 1);
      const ops = await import('../../app/api/operations/route.ts');
      const list = (await (await ops.GET(req('GET', '/api/operations'))).json()) as { operations: Array<{ operationId: string; kind: string; state: string; done: number; total: number }> };
      const listed = list.operations.find((o) => o.operationId === op.id);
      assert.ok(listed, JSON.stringify(list.operations));
      assert.equal(listed.kind, 'replay');
      assert.equal(listed.state, 'completed');
      assert.equal(listed.done, 1);
    } finally {
      docs.close();
    }
  });

  test('a job is audited with who, selection and counts; each event names it; the group exports as a file', { timeout: 180_000 }, async () => {
    for (let i = 0; i < 4; i++) {
      const request = msg(T.EventRequest, { endpointId: 'erpendpoint', eventId: `audit-${i}`, eventTypeId: 'OrderPlaced', payload: { i } });
      await stack.store.writeStatus(request);
      await stack.store.writeStatus(msg(T.ErrorResponse, { endpointId: 'erpendpoint', eventId: `audit-${i}`, parentMessageId: request.messageId, errorType: 'LedgerError', errorText: `ledger rejected ORD-${i}, "=cmd"` }));
    }
    const groupsRoute = await import('../../app/api/failure-groups/route.ts');
    const groups = (await (await groupsRoute.GET(req('GET', '/api/failure-groups?endpointId=erpendpoint'))).json()) as GroupsBody;
    const groupId = groups.groups[0]!.groupId;

    // The export of the group: streamed CSV, the filter in the file name, one line per event (formula neutralised).
    const exportRoute = await import('../../app/api/endpoints/[endpointId]/events/export/route.ts');
    const file = await exportRoute.GET(req('GET', `/api/endpoints/erpendpoint/events/export?format=csv&groupId=${groupId}`), { params: Promise.resolve({ endpointId: 'erpendpoint' }) });
    assert.equal(file.status, 200);
    assert.match(file.headers.get('content-disposition') ?? '', new RegExp(`filename="erpendpoint-.*group_${groupId}.*\\.csv"`));
    const lines = (await file.text()).trim().split('\n');
    assert.equal(lines.length, 5, 'a header and the 4 events');

    const ops = await import('../../app/api/operations/route.ts');
    const one = await import('../../app/api/operations/[operationId]/route.ts');
    const created = await ops.POST(req('POST', '/api/operations', { kind: 'skip', selection: { endpointId: 'erpendpoint', groupId } }));
    assert.equal(created.status, 202, await created.clone().text());
    const { operationId, total } = (await created.json()) as { operationId: string; total: number };
    assert.equal(total, 4);
    const params = { params: Promise.resolve({ operationId }) };
    for (let i = 0; ; i++) {
      const v = (await (await one.GET(req('GET', `/api/operations/${operationId}`), params)).json()) as { state: string };
      if (v.state === 'completed') break;
      assert.ok(i < 600, `job still ${v.state}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const audits = async (action: string) => (await queryAudit(stack.store.database, { action, pageSize: 50 })).items;
    const create = (await audits('resubmit')).concat(await audits('skip')).find((a) => JSON.stringify(a.details).includes(operationId));
    assert.ok(create, 'the creation is audited');
    assert.deepEqual((create.details as { selection?: unknown }).selection, { endpointId: 'erpendpoint', groupId });
    let finished;
    for (let i = 0; i < 50 && !finished; i++) {
      finished = (await audits('operation.skip')).find((a) => a.target === `operation/${operationId}`);
      if (!finished) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(finished, 'the finished job is audited');
    assert.equal(finished.outcome, 'succeeded');
    assert.deepEqual(
      (({ total: t, done, refused, failed }) => ({ total: t, done, refused, failed }))(finished.details as Record<string, number>),
      { total: 4, done: 4, refused: 0, failed: 0 },
    );
    const eventAudits = await stack.store.listAudits('audit-0');
    assert.ok(eventAudits.items.some((a) => a.type === 'Skip' && a.data?.includes(operationId)), "the event's own audit names the job");
  });

  test('NIMBUS_OPERATIONS_RATE (default 50 per second, 0 = no limit) and NIMBUS_OPERATIONS_CONCURRENCY (default 100, at most 100); nonsense refused', () => {
    assert.equal(operationsRate({}), 50);
    assert.equal(operationsRate({ NIMBUS_OPERATIONS_RATE: '0' }), 0);
    assert.equal(operationsRate({ NIMBUS_OPERATIONS_RATE: '120' }), 120);
    assert.throws(() => operationsRate({ NIMBUS_OPERATIONS_RATE: 'fast' }), /NIMBUS_OPERATIONS_RATE/);
    assert.equal(operationsConcurrency({}), 100);
    assert.equal(operationsConcurrency({ NIMBUS_OPERATIONS_CONCURRENCY: '4' }), 4);
    assert.throws(() => operationsConcurrency({ NIMBUS_OPERATIONS_CONCURRENCY: '0' }), /NIMBUS_OPERATIONS_CONCURRENCY/);
    assert.throws(() => operationsConcurrency({ NIMBUS_OPERATIONS_CONCURRENCY: '101' }), /NIMBUS_OPERATIONS_CONCURRENCY/);
  });
});
