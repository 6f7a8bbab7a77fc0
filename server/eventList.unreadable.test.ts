// The Endpoint page's list route and a failure group's export on the embedded stack (real route handlers, the real
// Cosmos client): a page of the list says which of its rows could not be read (stored documents the schema rejects),
// as the export's file does, rather than leaving them out silently; and the group export takes the list's status
// filter, refusing an unknown status with a 400 that says why.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T } from '@nimbus/sdk/contract';
import { fingerprintOf } from '../lib/store/index.ts';
import { msg } from '../lib/store/testing/fixtures.ts';
import { plantUnreadableRows } from '../lib/store/testing/unreadableRows.ts';
import { routeRequest as req, startRouteTestStack, type ConsoleTestStack } from './testing/routeStack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
let stack: ConsoleTestStack;

before(async () => {
  stack = await startRouteTestStack('eventlistunreadable');
});
after(() => stack?.close());

const params = (endpointId: string) => ({ params: Promise.resolve({ endpointId }) });

/** An event the endpoint failed with `error` (dead-lettered when `deadLetter`), in session `sessionId`. */
async function failed(endpointId: string, eventId: string, sessionId: string, error: { errorType: string; errorText: string }, deadLetter = false) {
  const request = msg(T.EventRequest, { endpointId, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { eventId } });
  await stack.store.writeStatus(request);
  await stack.store.writeStatus(
    msg(T.ErrorResponse, { endpointId, eventId, sessionId, parentMessageId: request.messageId, ...error, ...(deadLetter ? { deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: error.errorText } : {}) }),
  );
}

interface ListBody {
  items: Array<{ eventId: string; status: string }>;
  continuation: string | null;
  unreadable: Array<{ id: string; issues: string }>;
}

describe("the Endpoint page's list and the group export", () => {
  test('a page of the list names its rows that could not be read; a page without any says none', { timeout: 120_000 }, async () => {
    const route = await import('../app/api/endpoints/[endpointId]/events/route.ts');
    const ep = 'billingendpoint';
    const session = `unreadable-${randomUUID()}`;
    await failed(ep, `${session}-a`, session, { errorType: 'LedgerError', errorText: 'ledger closed' });
    await failed(ep, `${session}-b`, session, { errorType: 'LedgerError', errorText: 'ledger closed' });
    const bad = [`${session}-bad-1`, `${session}-bad-2`];
    await plantUnreadableRows(stack.store.database, { endpointId: ep, eventId: `${session}-a` }, bad);

    const res = await route.GET(req('GET', `/api/endpoints/${ep}/events?sessionId=${session}`), params(ep));
    assert.equal(res.status, 200, await res.clone().text());
    const body = (await res.json()) as ListBody;
    assert.deepEqual(body.items.map((i) => i.eventId).sort(), [`${session}-a`, `${session}-b`], 'the rows that parse are listed as before');
    assert.deepEqual(body.unreadable.map((u) => u.id).sort(), bad, 'the two that do not are named');
    for (const u of body.unreadable) assert.match(u.issues, /^status: /, 'with the problem: the field, not its value');

    // A Failed row broken elsewhere still matches a status filter: it is named on that filter's page too.
    const failedOnly = `${session}-bad-failed`;
    await plantUnreadableRows(stack.store.database, { endpointId: ep, eventId: `${session}-a` }, [failedOnly], { retryCount: 'many' });
    const filtered = (await (await route.GET(req('GET', `/api/endpoints/${ep}/events?sessionId=${session}&status=Failed`), params(ep))).json()) as ListBody;
    assert.deepEqual(filtered.unreadable.map((u) => u.id), [failedOnly]);
    assert.match(filtered.unreadable[0]!.issues, /^retryCount: /);

    const clean = (await (await route.GET(req('GET', `/api/endpoints/${ep}/events?sessionId=${session}-none`), params(ep))).json()) as ListBody;
    assert.deepEqual([clean.items, clean.unreadable], [[], []], 'a page with no unreadable row says so with an empty list');
  });

  test("the group export takes a status: only the group's rows of it; an unknown status is a 400 naming it", { timeout: 120_000 }, async () => {
    const route = await import('../app/api/endpoints/[endpointId]/events/export/route.ts');
    const ep = 'erpendpoint';
    const tag = randomUUID().slice(0, 8);
    // One cause, failed once and dead-lettered once: one group (the fingerprint is the error type and text).
    const error = { errorType: 'PostingError', errorText: `posting period closed (${tag})` };
    await failed(ep, `${tag}-failed`, `s-${tag}`, error);
    await failed(ep, `${tag}-dead`, `s-${tag}`, error, true);
    const groupId = fingerprintOf({ status: 'Failed', ...error, deadLetterReason: null, deadLetterErrorDescription: null, eventTypeId: 'OrderPlaced', eventId: '', sessionId: '' })!.groupId;

    const exported = async (query: string) => {
      const res = await route.GET(req('GET', `/api/endpoints/${ep}/events/export?format=json&groupId=${groupId}${query}`), params(ep));
      assert.equal(res.status, 200, await res.clone().text());
      return ((await res.json()) as { rows: Array<{ eventId: string; status: string }> }).rows.map((r) => `${r.eventId} ${r.status}`).sort();
    };
    assert.deepEqual(await exported(''), [`${tag}-dead DeadLettered`, `${tag}-failed Failed`], 'without a status: every row of the group');
    assert.deepEqual(await exported('&status=DeadLettered'), [`${tag}-dead DeadLettered`]);
    assert.deepEqual(await exported('&status=Failed'), [`${tag}-failed Failed`]);
    assert.deepEqual(await exported('&status=Failed,DeadLettered'), [`${tag}-dead DeadLettered`, `${tag}-failed Failed`]);

    const refused = await route.GET(req('GET', `/api/endpoints/${ep}/events/export?format=csv&groupId=${groupId}&status=Broken`), params(ep));
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /invalid filter: status\.0: /, 'the answer says the status is what is wrong');
  });
});
