// The bulk job follow-up (GET /api/operations/{id}/outcome) through its route handler on the embedded stack (real
// Service Bus emulator, embedded Cosmos, the console's runner): events the job refused are counted as refused with
// the Manager's reason, not as "not reached yet"; events past the job's cursor are not reached (unless the job kept
// their refusal or send failure, as a cancel does for the lot it stopped); and events waiting
// for someone (a Pending handoff) are counted as waiting, which lets the drawer stop re-reading an ended job. The
// confirmation of a second job on the same events names the first (who, when, sent, failed again); of other events, none.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { routeRequest, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import type { JobOutcome } from './outcome.ts';
import type { PreviousJob } from './previousJob.ts';
import { stopOperations } from './service.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
// One caller creates more jobs than the rate limit's burst admits: each freeze costs HEAVY_READ_COST (server/auth/rateLimit.ts),
// and the limit has its own tests (server/auth/heavyReads.test.ts).
process.env.NIMBUS_RATE_LIMIT_BURST = '1000';
const EP = 'crmendpoint';
const SESSION = 'S-refusals';
let stack: ConsoleTestStack;

before(async () => {
  stack = await startRouteTestStack('outcomerefusals');
});
after(async () => {
  await stopOperations();
  await stack?.close();
});

const routes = async () => ({
  ops: await import('../../app/api/operations/route.ts'),
  one: await import('../../app/api/operations/[operationId]/route.ts'),
  outcome: await import('../../app/api/operations/[operationId]/outcome/route.ts'),
});
const params = (operationId: string) => ({ params: Promise.resolve({ operationId }) });

/** A failed event as the Resolver records it; `payload: false` leaves the request without one (nothing to resubmit). */
async function fail(eventId: string, payload = true): Promise<void> {
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: SESSION, eventTypeId: 'CustomerUpdated', ...(payload ? { payload: { eventId } } : {}) });
  const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: SESSION, parentMessageId: request.messageId, errorType: 'RefusalTestError', errorText: 'boom' });
  for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

type Started = { operationId: string; total: number; previous?: PreviousJob | null };

async function post(eventIds: string[], hold: boolean): Promise<Started> {
  const { ops } = await routes();
  const res = await ops.POST(routeRequest('POST', '/api/operations', { kind: 'resubmit', selection: { endpointId: EP, eventIds }, hold }));
  assert.equal(res.status, 202, await res.clone().text());
  return (await res.json()) as Started;
}
const start = async (eventIds: string[], hold: boolean): Promise<string> => (await post(eventIds, hold)).operationId;

async function outcome(operationId: string): Promise<JobOutcome> {
  const { outcome } = await routes();
  const res = await outcome.GET(routeRequest('GET', `/api/operations/${operationId}/outcome`), params(operationId));
  assert.equal(res.status, 200, await res.clone().text());
  return (await res.json()) as JobOutcome;
}

test('a job refuses events with nothing to resubmit: the outcome counts them refused with the reason, not "not reached"', { timeout: 240_000 }, async () => {
  const ok = ['ok-0', 'ok-1', 'ok-2'];
  const bare = ['bare-0', 'bare-1'];
  for (const id of ok) await fail(id);
  for (const id of bare) await fail(id, false);
  const id = await start([...ok, ...bare], false);
  const { one } = await routes();
  // A positive signal: the job's own state, read through its route.
  for (const end = Date.now() + 180_000; ; ) {
    const v = (await (await one.GET(routeRequest('GET', `/api/operations/${id}`), params(id))).json()) as { state: string; refused: number; done: number };
    if (v.state === 'completed') {
      assert.deepEqual({ done: v.done, refused: v.refused }, { done: 3, refused: 2 });
      break;
    }
    assert.ok(Date.now() < end, `job still ${v.state}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const o = await outcome(id);
  // The three sent are claimed (Pending: no endpoint answers in this test); the two refused stay Failed.
  assert.equal(o.counts.stillFailed, 2);
  assert.equal(o.counts.inProgress, 3);
  assert.equal(o.waiting, 0, 'a claim waits for the broker, not for someone');
  assert.deepEqual(o.stillFailedSplit, { notReached: 0, refused: 2, notSent: 0, unknown: 0 });
  assert.equal(o.refusals.length, 1);
  assert.equal(o.refusals[0]!.events, 2);
  assert.match(o.refusals[0]!.reason, /no stored payload to resubmit/);

  // "Resubmit all" again on the same events: the confirmation names the job that already covered them.
  const again = await post([...ok, ...bare], true);
  assert.equal(again.total, 2, 'only the two refused are still failed');
  assert.ok(again.previous, 'the previous job is named');
  assert.equal(again.previous.operationId, id);
  assert.equal(again.previous.state, 'completed');
  assert.deepEqual({ done: again.previous.done, refused: again.previous.refused, failedAgain: again.previous.failedAgain, checked: again.previous.checked }, { done: 3, refused: 2, failedAgain: 0, checked: 5 });
  assert.equal(typeof again.previous.startedBy, 'string');
  assert.ok(Date.parse(again.previous.startedAt) > 0);
});

test('events a job has not reached are not reached; a pending handoff is counted as waiting', { timeout: 120_000 }, async () => {
  await fail('held-0');
  // A handoff: the endpoint answered that another system finishes the event later.
  const eventId = 'handoff-0';
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: SESSION, eventTypeId: 'CustomerUpdated', payload: { eventId } });
  const handoff = msg(T.PendingHandoffResponse, { endpointId: EP, eventId, sessionId: SESSION, parentMessageId: request.messageId });
  for (const m of [request, handoff]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  // Held (prepared): it never runs, so its cursor stays at 0. No job covered these events before.
  const held = await post(['held-0', eventId], true);
  assert.equal(held.previous, null);
  const id = held.operationId;
  const o = await outcome(id);
  assert.equal(o.counts.stillFailed, 1);
  assert.deepEqual(o.stillFailedSplit, { notReached: 1, refused: 0, notSent: 0, unknown: 0 });
  assert.equal(o.counts.inProgress, 1);
  assert.equal(o.waiting, 1);
  assert.deepEqual(o.refusals, []);
});

/**
 * A job that reached four failed events and left them unchanged, with the counts and kept lists of a long job whose
 * lists were cut at MAX_ERRORS_KEPT: the held job is rewritten as the runner would have saved it (a run of more than
 * 50 send failures needs a broker outage, which this file does not stage). e0 is a kept refusal, e1 a kept send
 * failure, e2 and e3 in neither list. `end`: how the job ended, completed past every event unless told.
 */
async function reachedJob(
  ids: string[],
  counts: { refused: number; failed: number },
  end: { state: 'completed' | 'cancelled'; cursor: number; inFlightTo?: number; awaitingReceipt?: number[] } = { state: 'completed', cursor: ids.length },
): Promise<string> {
  const { getContext } = await import('../context.ts');
  const { getOperations } = await import('./service.ts');
  const { jobDoc } = await import('./jobs.ts');
  const { jobs } = getOperations(await getContext());
  const id = (await post(ids, true)).operationId;
  const job = (await jobs.get(id))!;
  const kept = (eventId: string, status: number, detail: string) => ({ endpointId: EP, eventId, status, detail });
  // Started after the events failed: their failures are not "failed again".
  const startedAt = new Date().toISOString();
  await jobs.docs.write(jobDoc(id), {
    ...job,
    ...end,
    startedAt,
    finishedAt: new Date().toISOString(),
    done: 0,
    ...counts,
    refusals: [kept(ids[0]!, 409, 'resubmit is not possible for an event that is Completed')],
    errors: [kept(ids[1]!, 503, 'the broker is unavailable')],
  });
  return id;
}

test('reached events in neither kept list are "refused or not sent" unless every refusal or every failure was kept', { timeout: 120_000 }, async () => {
  const ids = ['cut-0', 'cut-1', 'cut-2', 'cut-3'];
  for (const e of ids) await fail(e);
  // Both lists cut: e2 and e3 may be either. Old code counted them refused, with the Manager's reasons on hover.
  let o = await outcome(await reachedJob(ids, { refused: 2, failed: 2 }));
  assert.equal(o.counts.stillFailed, 4);
  assert.deepEqual(o.stillFailedSplit, { notReached: 0, refused: 1, notSent: 1, unknown: 2 });
  // Every send failure kept (the only one is e1): the rest were refused.
  o = await outcome(await reachedJob(ids, { refused: 3, failed: 1 }));
  assert.deepEqual(o.stillFailedSplit, { notReached: 0, refused: 3, notSent: 1, unknown: 0 });
  // Every refusal kept (the only one is e0): the rest could not be sent (a broker outage past 50 failures).
  o = await outcome(await reachedJob(ids, { refused: 1, failed: 3 }));
  assert.deepEqual(o.stillFailedSplit, { notReached: 0, refused: 1, notSent: 3, unknown: 0 });
});

// Before, every event at or past the cursor was "not reached": a cancel counts the lot it stopped (its refusals and
// send failures kept) without moving the cursor, so a cancelled job's refused and unsent events read "not reached
// yet" beside its counts refused 1, failed 1 - notReached 3 where it is 1.
test("a cancelled job's kept refusal and send failure past its cursor are refused and not sent, not \"not reached\"", { timeout: 120_000 }, async () => {
  const ids = ['stopped-0', 'stopped-1', 'stopped-2'];
  for (const e of ids) await fail(e);
  const o = await outcome(await reachedJob(ids, { refused: 1, failed: 1 }, { state: 'cancelled', cursor: 0 }));
  assert.equal(o.counts.stillFailed, 3);
  assert.deepEqual(o.stillFailedSplit, { notReached: 1, refused: 1, notSent: 1, unknown: 0 });
});

// Before, a cancelled job's refusals past the kept list read "not reached" - the cancel counted them (refused 3) but
// only the first MAX_ERRORS_KEPT keep their event, and every other event at or past the cursor was not reached:
// notReached 3 where it is 1 (the row awaiting a receipt, which the cancel did not count), refused 1 where it is 3.
test("a cancelled job's refusals past the kept list are refused, N of them listed, not \"not reached\"", { timeout: 120_000 }, async () => {
  const ids = ['capped-0', 'capped-1', 'capped-2', 'capped-3', 'capped-4'];
  for (const e of ids) await fail(e);
  // The cancel stopped a lot of the five: it counted e0, e2, e3 refused (only e0's refusal kept: the list was full)
  // and e1 not sent, and found e4 without a receipt (awaitingReceipt). Every send failure was kept, so e2 and e3,
  // reached and in neither list, are refusals.
  const id = await reachedJob(ids, { refused: 3, failed: 1 }, { state: 'cancelled', cursor: 0, inFlightTo: 5, awaitingReceipt: [4] });
  const o = await outcome(id);
  assert.equal(o.counts.stillFailed, 5);
  assert.deepEqual(o.stillFailedSplit, { notReached: 1, refused: 3, notSent: 1, unknown: 0 });
  assert.equal(o.refusedListed, 1, 'one of the three refused has its reason kept');
  assert.deepEqual(o.refusals, [{ reason: 'resubmit is not possible for an event that is Completed', events: 1 }]);
});

// Before, a job cancelled by a build older than 7f50936 read as if its cancel had counted every row up to the
// in-flight mark: that cancel counted by receipts alone and listed no row awaiting one, so the rows between the
// cursor and a mark that ran ahead of it (a rate-limited job's rows never sent) read refused - refused 4 where the job
// refused 1 and never reached three, or refused 4 where it refused 2 and never reached two past a cursor of 3.
test("a job cancelled by an older build, which left the rows past its cursor uncounted, has not reached them", { timeout: 120_000 }, async () => {
  const ids = ['oldcancel-0', 'oldcancel-1', 'oldcancel-2', 'oldcancel-3', 'oldcancel-4'];
  for (const e of ids) await fail(e);
  // The stopped lot's e0 refused and e1 not sent, counted by the cancel; e2-e4 below the mark, no receipt, unlisted.
  let o = await outcome(await reachedJob(ids, { refused: 1, failed: 1 }, { state: 'cancelled', cursor: 0, inFlightTo: 5 }));
  assert.equal(o.counts.stillFailed, 5);
  assert.deepEqual(o.stillFailedSplit, { notReached: 3, refused: 1, notSent: 1, unknown: 0 });
  // e0-e2 counted as the cursor passed them (e2 refused, its reason not kept), e3 and e4 unlisted: the counts add up
  // to more than the window's two rows, but to the cursor alone - they are checked against the mark, not the window.
  o = await outcome(await reachedJob(ids, { refused: 2, failed: 1 }, { state: 'cancelled', cursor: 3, inFlightTo: 5 }));
  assert.deepEqual(o.stillFailedSplit, { notReached: 2, refused: 2, notSent: 1, unknown: 0 });
});

test('the confirmation is prepared even when the earlier jobs cannot be read (the lookup is an aid)', { timeout: 120_000 }, async () => {
  const { getContext } = await import('../context.ts');
  const { getOperations } = await import('./service.ts');
  const { jobDoc } = await import('./jobs.ts');
  const { jobs } = getOperations(await getContext());
  await fail('corrupt-0');
  // A job document of an older shape (no endpoints, no selection), newest of the list: reading it used to throw.
  await jobs.docs.write(jobDoc('zz-old-shape'), { operationId: 'zz-old-shape', state: 'completed', startedAt: new Date().toISOString() });
  const held = await post(['corrupt-0'], true);
  assert.equal(held.total, 1);
  assert.equal(held.previous, null);
});
