// The synchronous bulk command routes (POST /api/event/resubmit|skip with { endpointId, eventIds }) on the real
// stack (emulator, embedded Cosmos, real clients; the handlers called as Next calls them). They now send in lots
// (Manager.executeMany); the answers must be the ones the one-event-at-a-time route gave. Each test seeds two
// identical sets of events - claimable, dead-lettered, completed, without a payload, already clicked, with rows in
// two sessions, unknown, one named twice - runs the former route's loop (Manager.execute per event, four at a
// time, copied below) on one and the route on the other, and compares the answers event by event (outcome, status,
// error text, which message id) and the receipts. The route's set also goes to Cosmos in bulk requests, counted
// on the embedded server, and costs fewer requests than the loop.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../lib/store/testing/fixtures.ts';
import { count, requestsDuring } from '../lib/store/testing/requestCount.ts';
import type * as ResubmitRoute from '../app/api/event/resubmit/route.ts';
import type * as SkipRoute from '../app/api/event/skip/route.ts';
import type { BulkResult } from './api.ts';
import type { ConsoleContext } from './context.ts';
import { HttpError } from './http.ts';
import { useConsoleStack } from './testing/consoleStack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
let ctx: ConsoleContext;
let routes: { resubmit: typeof ResubmitRoute; skip: typeof SkipRoute };

const stack = useConsoleStack({
  database: 'bulkroutes',
  prepare: async () => {
    routes = { resubmit: await import('../app/api/event/resubmit/route.ts'), skip: await import('../app/api/event/skip/route.ts') };
    ctx = await (await import('./context.ts')).getContext();
  },
});

/** The route's loop before lots: Manager.execute per event, four at a time (server/api.ts at bda4702). */
async function oneAtATime(endpointId: string, eventIds: string[], spec: { kind: 'resubmit' } | { kind: 'skip' }, auditor: string): Promise<BulkResult> {
  const unique = [...new Set(eventIds)];
  const results: BulkResult['results'] = new Array(unique.length);
  let next = 0;
  const worker = async () => {
    while (next < unique.length) {
      const i = next++;
      const eventId = unique[i]!;
      try {
        const r = await ctx.manager.execute(endpointId, eventId, spec, auditor);
        results[i] = { eventId, outcome: r.outcome, messageId: r.messageId };
      } catch (err) {
        if (err instanceof HttpError) results[i] = { eventId, outcome: 'error', status: err.status, error: err.message, detail: err.detail };
        else results[i] = { eventId, outcome: 'error', status: 500, error: 'internal error', detail: 'the command failed' };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, unique.length) }, worker));
  return {
    requested: unique.length,
    sent: results.filter((r) => r.outcome === 'sent').length,
    duplicates: results.filter((r) => r.outcome === 'duplicate').length,
    failed: results.filter((r) => r.outcome === 'error').length,
    results,
  };
}

async function record(m: ReturnType<typeof msg>): Promise<void> {
  await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

/** One event as the Resolver records it, in session S-<eventId> (or `sessionId`). */
async function seed(eventId: string, end: 'failed' | 'dead' | 'completed' | 'no payload', sessionId = `S-${eventId}`): Promise<void> {
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'OrderPlaced', ...(end === 'no payload' ? {} : { payload: { eventId } }) });
  await record(request);
  const answer = { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId };
  if (end === 'completed') await record(msg(T.ResolutionResponse, answer));
  else if (end === 'dead')
    await record(msg(T.ErrorResponse, { ...answer, errorType: 'E', errorText: 'boom', deadLetterReason: 'MaxDeliveryCountExceeded', deadLetterErrorDescription: 'dead' }));
  else await record(msg(T.ErrorResponse, { ...answer, errorType: 'E', errorText: 'boom' }));
}

/** The scenario under `p`: the event ids to send (in order, one twice) and the earlier click's message id. */
async function scenario(p: string, spec: { kind: 'resubmit' } | { kind: 'skip' }): Promise<{ ids: string[]; clicked: string }> {
  for (const name of ['failed-1', 'failed-2', 'failed-3', 'clicked']) await seed(p + name, 'failed');
  await seed(`${p}dead`, 'dead');
  await seed(`${p}done`, 'completed');
  await seed(`${p}no-payload`, 'no payload');
  // Rows in two sessions: completed in one, failed in the other (the one-event path picks the failed one).
  await seed(`${p}two-sessions`, 'completed', `A-${p}`);
  await seed(`${p}two-sessions`, 'failed', `B-${p}`);
  const clicked = await ctx.manager.execute(EP, `${p}clicked`, spec, 'clicker');
  const ids = ['failed-1', 'done', 'unknown', 'failed-2', 'no-payload', 'clicked', 'two-sessions', 'dead', 'failed-1', 'failed-3'].map((n) => p + n);
  return { ids, clicked: clicked.messageId };
}

/** The answer with the set's prefix taken out, message ids named by what they are, and each sent event's receipt. */
async function comparable(r: BulkResult, p: string, clicked: string) {
  const strip = (s: string) => s.split(p).join('');
  const results = await Promise.all(
    r.results.map(async (x) => {
      if (x.outcome === 'error') return { eventId: strip(x.eventId), outcome: x.outcome, status: x.status, error: strip(x.error), detail: strip(x.detail) };
      const rows = await stack.store.listEventRows(EP, x.eventId);
      const claim = rows.find((row) => row.lastMessageId === x.messageId && row.status === 'Pending');
      const which = x.messageId === clicked ? 'the earlier click' : claim ? `the claim of session ${strip(claim.sessionId)}` : 'unknown';
      const receipt = await stack.store.getAudit(x.eventId, x.messageId);
      const data = JSON.parse(receipt?.data ?? '{}') as Record<string, unknown>;
      return {
        eventId: strip(x.eventId),
        outcome: x.outcome,
        messageId: which,
        receipt: { type: receipt?.type, auditor: receipt?.auditor, comment: receipt?.comment, data: Object.keys(data).sort(), sessionId: strip(String(data.sessionId)) },
      };
    }),
  );
  return { requested: r.requested, sent: r.sent, duplicates: r.duplicates, failed: r.failed, results };
}

const post = (path: string, body: unknown) =>
  new Request(`http://127.0.0.1${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

for (const kind of ['resubmit', 'skip'] as const) {
  describe(`POST /api/event/${kind}`, () => {
    test('each event answered as the one-at-a-time route answered it (sent, duplicate, 409, 404), in bulk requests', async () => {
      const spec = { kind } as { kind: 'resubmit' } | { kind: 'skip' };
      const lot = await scenario(`${kind}-lot-`, spec);
      const one = await scenario(`${kind}-one-`, spec);

      const { value: res, requests: lotRequests } = await requestsDuring(() => routes[kind].POST(post(`/api/event/${kind}`, { endpointId: EP, eventIds: lot.ids })));
      assert.equal(res.status, 200, await res.clone().text());
      const answered = (await res.json()) as BulkResult;
      const sentOne = answered.results.find((x) => x.outcome === 'sent');
      const auditor = (await stack.store.getAudit(sentOne!.eventId, (sentOne as { messageId: string }).messageId))!.auditor;
      const { value: former, requests: oneRequests } = await requestsDuring(() => oneAtATime(EP, one.ids, spec, auditor));

      const got = await comparable(answered, `${kind}-lot-`, lot.clicked);
      assert.deepEqual(got, await comparable(former, `${kind}-one-`, one.clicked));
      // What the answers are (so the comparison cannot pass on two equally wrong answers).
      assert.deepEqual(
        got.results.map((x) => [x.eventId, x.outcome, 'status' in x ? x.status : x.messageId]),
        [
          ['failed-1', 'sent', 'the claim of session S-failed-1'],
          ['done', 'error', 409],
          ['unknown', 'error', 404],
          ['failed-2', 'sent', 'the claim of session S-failed-2'],
          kind === 'resubmit' ? ['no-payload', 'error', 409] : ['no-payload', 'sent', 'the claim of session S-no-payload'],
          ['clicked', 'duplicate', 'the earlier click'],
          ['two-sessions', 'sent', 'the claim of session B-'],
          ['dead', 'sent', 'the claim of session S-dead'],
          ['failed-3', 'sent', 'the claim of session S-failed-3'],
        ],
      );
      assert.equal(got.requested, 9, 'an event named twice is answered once');
      const receipt = got.results.find((x) => x.eventId === 'failed-1') as { receipt: Record<string, unknown> };
      assert.deepEqual(receipt.receipt, { type: kind === 'resubmit' ? 'Resubmit' : 'Skip', auditor, comment: null, data: ['answers', 'messageId', 'sessionId'], sessionId: 'S-failed-1' }, 'a click\'s receipt: no operation named');

      // In lots: the claims and the receipts each in one bulk request, fewer requests than one event at a time.
      assert.ok(count(lotRequests, 'POST events bulk') >= 2, lotRequests.join(', '));
      assert.equal(count(lotRequests, 'POST audits bulk'), 1, lotRequests.join(', '));
      assert.ok(lotRequests.length < oneRequests.length, `${lotRequests.length} requests in lots, ${oneRequests.length} one at a time`);
    });
  });
}
