// The Resolver end to end on the real clients: messages put on the Resolver topic of the embedded Service Bus
// emulator, recorded in the embedded Cosmos server. Each message type's row, history and counters; the stale-write
// guard; the heartbeat divert; bad data dead-lettered without blocking its session.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop, WellKnownSession, eventBody, HEARTBEAT_EVENT_TYPE_ID } from '@nimbus/sdk/contract';
import { DeadLetterReason } from './index.ts';
import { ResolverHarness, errorBody, eventually, orderBody } from './testHarness.ts';

let h: ResolverHarness;
before(async () => {
  h = await ResolverHarness.start();
  h.resolver();
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

/** Sends messages of one session in order and waits until each is settled. */
async function run(...messages: Parameters<ResolverHarness['send']>[0][]) {
  const sent = [];
  const expected = new Map<string, number>();
  for (const m of messages) {
    if (m.messageId !== undefined) expected.set(m.messageId, (expected.get(m.messageId) ?? settlementOf(m.messageId).length) + 1);
    sent.push(await h.send(m));
  }
  const need = (id: string) => expected.get(id) ?? 1;
  for (const s of sent) {
    await eventually(() => (settlementOf(s.messageId).length >= need(s.messageId) ? true : undefined), `settlement of ${s.messageId}`);
  }
  return sent;
}

/** What happened to a message, counting only settlements that landed (a failed one is delivered again). */
function settlementOf(messageId: string) {
  return h.settled.filter((s) => s.messageId === messageId && s.ok).map((s) => (s.settlement.kind === 'complete' ? s.settlement.result : s.settlement.kind));
}

describe('each message type becomes the right row, history and counters', () => {
  test('request -> Pending with payload; response -> Completed; history has both; counters move', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const req = await run({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', body: orderBody({ orderId: 'A-1' }) });
    let row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.equal(row?.status, 'Pending');
    assert.deepEqual(row?.payload, { orderId: 'A-1' });
    assert.equal(row?.from, 'shop');
    assert.equal((await h.store.getCounts(ep)).pending, 1);

    await run({ type: T.ResolutionResponse, eventId: ev, from: ep, to: 'Resolver', parentMessageId: req[0]!.messageId });
    row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.equal(row?.status, 'Completed');
    assert.deepEqual(row?.payload, { orderId: 'A-1' }, 'the response keeps the request payload');
    const counts = await h.store.getCounts(ep);
    assert.equal(counts.pending, 0);
    assert.equal(counts.completed, 1);
    const history = await h.store.listHistory(ev);
    assert.deepEqual(history.items.map((i) => i.messageType).sort(), ['EventRequest', 'ResolutionResponse']);
  });

  test('ErrorResponse -> Failed with its error; a dead-letter notification -> DeadLettered; an empty description -> Failed', async () => {
    const ep = uniq('crm');
    const [a, b, c] = [uniq('e'), uniq('e'), uniq('e')];
    await run(
      { type: T.ErrorResponse, eventId: a, from: ep, body: errorBody('boom', 'InvalidOperation') },
      {
        type: T.ErrorResponse,
        eventId: b,
        from: ep,
        body: errorBody('bad payload'),
        props: { [Prop.DeadLetterReason]: 'Permanent failure', [Prop.DeadLetterErrorDescription]: 'payload is null' },
      },
      { type: T.ErrorResponse, eventId: c, from: ep, body: errorBody('x'), props: { [Prop.DeadLetterErrorDescription]: '' } },
    );
    const failed = await h.store.getStatusRow(ep, a, 's-1');
    assert.equal(failed?.status, 'Failed');
    assert.equal(failed?.errorText, 'boom');
    assert.equal(failed?.errorType, 'InvalidOperation');
    const dead = await h.store.getStatusRow(ep, b, 's-1');
    assert.equal(dead?.status, 'DeadLettered');
    assert.equal(dead?.deadLetterReason, 'Permanent failure');
    assert.equal((await h.store.getStatusRow(ep, c, 's-1'))?.status, 'Failed');
    const counts = await h.store.getCounts(ep);
    assert.equal(counts.failed, 3, 'Failed column = Failed + DeadLettered + Unsupported');
  });

  test('Deferral, Skip and Unsupported responses', async () => {
    const ep = uniq('crm');
    const [d, s, u] = [uniq('e'), uniq('e'), uniq('e')];
    await run(
      { type: T.DeferralResponse, eventId: d, from: ep },
      { type: T.SkipResponse, eventId: s, from: ep, body: errorBody('DuplicateDetected') },
      { type: T.UnsupportedResponse, eventId: u, from: ep },
    );
    assert.equal((await h.store.getStatusRow(ep, d, 's-1'))?.status, 'Deferred');
    assert.equal((await h.store.getStatusRow(ep, s, 's-1'))?.status, 'Skipped');
    assert.equal((await h.store.getStatusRow(ep, u, 's-1'))?.status, 'Unsupported');
    const counts = await h.store.getCounts(ep);
    assert.equal(counts.deferred, 1);
    assert.equal(counts.skipped, 1);
    assert.equal(counts.failed, 1);
  });

  test('handoff: PendingHandoffResponse -> Pending/Handoff with its details; HandoffCompletedRequest -> plain Pending; then Completed', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const expectedBy = '2026-12-03T10:00:00.000Z';
    const req = await run({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', body: orderBody({ orderId: 'H' }) });
    await run({
      type: T.PendingHandoffResponse,
      eventId: ev,
      from: ep,
      parentMessageId: req[0]!.messageId,
      props: { [Prop.HandoffReason]: 'DMF import', [Prop.ExternalJobId]: 'job-7', [Prop.ExpectedBy]: expectedBy },
    });
    let row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.equal(row?.status, 'Pending');
    assert.equal(row?.subStatus, 'Handoff');
    assert.equal(row?.handoffReason, 'DMF import');
    assert.equal(row?.externalJobId, 'job-7');
    assert.equal(row?.expectedBy, expectedBy);
    assert.equal((await h.store.getCounts(ep)).handoff, 1);

    const settle = await run({ type: T.HandoffCompletedRequest, eventId: ev, to: ep, from: 'Manager' });
    row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.equal(row?.status, 'Pending');
    assert.equal(row?.subStatus, null, 'the settlement request clears the handoff sub-status');
    await run({ type: T.ResolutionResponse, eventId: ev, from: ep, parentMessageId: settle[0]!.messageId });
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
  });

  test('RetryRequest -> Pending plus one Retry audit; a resubmission reopens a Failed row; a request without From is recorded as self', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const [, retry] = await run(
      { type: T.ErrorResponse, eventId: ev, from: ep, body: errorBody('boom') },
      { type: T.RetryRequest, eventId: ev, to: ep, from: 'Retry', props: { [Prop.RetryCount]: 1 } },
    );
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Pending');
    const audits = await h.store.listAudits(ev);
    assert.deepEqual(audits.items.map((a) => [a.type, a.auditor]), [['Retry', 'Manager']]);
    assert.ok(retry);

    const ev2 = uniq('e');
    await run(
      { type: T.ErrorResponse, eventId: ev2, from: ep, body: errorBody('boom') },
      { type: T.ResubmissionRequest, eventId: ev2, to: ep, from: 'Manager', body: orderBody({ orderId: 'fixed' }) },
    );
    const row = await h.store.getStatusRow(ep, ev2, 's-1');
    assert.equal(row?.status, 'Pending');
    assert.deepEqual(row?.payload, { orderId: 'fixed' });

    const ev3 = uniq('e');
    await run({ type: T.EventRequest, eventId: ev3, to: ep, props: { [Prop.OriginatingFrom]: 'shop' } });
    assert.equal((await h.store.getStatusRow(ep, ev3, 's-1'))?.from, 'shop');
  });
});

describe('stale-write guard, end to end', () => {
  test('a request copy arriving after its response is recorded in history but leaves the row Completed; logged, counted, audited', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const requestId = randomUUID();
    const ignoredBefore = h.metrics.counts('nimbus.resolver.outcome_ignored');
    await run(
      { type: T.ResolutionResponse, eventId: ev, from: ep, parentMessageId: requestId },
      { type: T.EventRequest, eventId: ev, to: ep, from: 'shop', messageId: requestId, body: orderBody({ orderId: 'late' }) },
    );
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.equal(row?.status, 'Completed');
    assert.equal((await h.store.listHistory(ev)).items.length, 2, 'the late copy is still in the Flow');
    assert.deepEqual(settlementOf(requestId), ['ignored'], 'completed either way');
    assert.equal(h.metrics.counts('nimbus.resolver.outcome_ignored') - ignoredBefore, 1);
    const audits = (await h.store.listAudits(ev)).items;
    assert.equal(audits.length, 1);
    assert.equal(audits[0]!.type, 'Comment');
    assert.equal(audits[0]!.auditor, 'Resolver');
    assert.match(audits[0]!.comment ?? '', new RegExp(`Ignored stale EventRequest ${requestId}`));
    const counts = await h.store.getCounts(ep);
    assert.equal(counts.completed, 1);
    assert.equal(counts.pending, 0);
  });

  test('a rescheduled copy of a request (and of a control request) the row already answers is refused; one history entry each', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const [req] = await run({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', body: orderBody({ orderId: 'r' }) });
    await run({ type: T.ResolutionResponse, eventId: ev, from: ep, parentMessageId: req!.messageId });
    await run({ type: T.EventRequest, eventId: ev, to: ep, from: 'shop', messageId: req!.messageId, props: { [Prop.ThrottleRetryCount]: 3 } });
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
    assert.equal((await h.store.listHistory(ev)).items.length, 2, 'the same MessageId keeps one history entry');

    const ev2 = uniq('e');
    const [, resub] = await run(
      { type: T.ErrorResponse, eventId: ev2, from: ep, body: errorBody('boom') },
      { type: T.ResubmissionRequest, eventId: ev2, to: ep, from: 'Manager' },
    );
    await run({ type: T.ResolutionResponse, eventId: ev2, from: ep, parentMessageId: resub!.messageId });
    await run({ type: T.ResubmissionRequest, eventId: ev2, to: ep, from: 'Manager', messageId: resub!.messageId, props: { [Prop.ThrottleRetryCount]: 1 } });
    assert.equal((await h.store.getStatusRow(ep, ev2, 's-1'))?.status, 'Completed');
    assert.deepEqual(settlementOf(resub!.messageId), ['written', 'ignored']);
  });

  test('a handoff park applies over Failed but is refused over Completed; a request copy never replaces a control projection', async () => {
    const ep = uniq('crm');
    const [f, c, r] = [uniq('e'), uniq('e'), uniq('e')];
    await run(
      { type: T.ErrorResponse, eventId: f, from: ep, body: errorBody('boom') },
      { type: T.PendingHandoffResponse, eventId: f, from: ep, props: { [Prop.HandoffReason]: 'retry parks' } },
    );
    const parked = await h.store.getStatusRow(ep, f, 's-1');
    assert.equal(parked?.status, 'Pending');
    assert.equal(parked?.subStatus, 'Handoff');

    const [, park] = await run(
      { type: T.ResolutionResponse, eventId: c, from: ep },
      { type: T.PendingHandoffResponse, eventId: c, from: ep, props: { [Prop.HandoffReason]: 'late park' } },
    );
    assert.equal((await h.store.getStatusRow(ep, c, 's-1'))?.status, 'Completed');
    assert.deepEqual(settlementOf(park!.messageId), ['ignored']);

    await run(
      { type: T.RetryRequest, eventId: r, to: ep, from: 'Retry' },
      { type: T.EventRequest, eventId: r, to: ep, from: 'shop' },
    );
    assert.equal((await h.store.getStatusRow(ep, r, 's-1'))?.messageType, 'RetryRequest');
  });
});

describe('heartbeats are never tracked', () => {
  test('the probe copy is dropped, the reply updates the heartbeat record, the Resolver probe records its liveness', async () => {
    const ep = uniq('crm');
    const probeId = randomUUID();
    const sentAt = new Date(Date.now() - 1000).toISOString();
    const [probe] = await run({
      type: T.EventRequest,
      eventId: uniq('hb'),
      to: ep,
      from: 'Manager',
      sessionId: WellKnownSession.Heartbeat,
      messageId: probeId,
      correlationId: probeId,
      eventTypeId: HEARTBEAT_EVENT_TYPE_ID,
      body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: sentAt }),
    });
    const hbEvent = uniq('hb');
    const [reply] = await run({
      type: T.ResolutionResponse,
      eventId: hbEvent,
      from: ep,
      sessionId: WellKnownSession.Heartbeat,
      correlationId: probeId,
      parentMessageId: probeId,
      // lower case: detection is case-insensitive
      eventTypeId: HEARTBEAT_EVENT_TYPE_ID.toLowerCase(),
      body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: sentAt, Endpoint: ep, SdkVersion: '1.2.3' }),
    });
    assert.deepEqual(settlementOf(probe!.messageId), ['dropped']);
    assert.deepEqual(settlementOf(reply!.messageId), ['heartbeat']);
    const records = await h.store.listHeartbeats(ep);
    assert.equal(records.length, 1);
    assert.equal(records[0]!.probeId, probeId);
    assert.equal(records[0]!.status, 'On');
    assert.equal(records[0]!.sdkVersion, '1.2.3');
    assert.equal(records[0]!.sentAt, sentAt);
    assert.equal((await h.store.listHistory(hbEvent)).items.length, 0, 'no history');
    assert.equal((await h.store.listEvents({ endpointId: ep })).items.length, 0, 'no tracking row');
    assert.equal((await h.store.getCounts(ep)).completed, 0);

    await run({
      type: T.EventRequest,
      eventId: uniq('hb'),
      to: 'Resolver',
      from: 'Manager',
      sessionId: WellKnownSession.ResolverHeartbeat,
      eventTypeId: HEARTBEAT_EVENT_TYPE_ID,
      body: eventBody(HEARTBEAT_EVENT_TYPE_ID, { ForwardSendTime: sentAt }),
    });
    const health = await h.store.getServiceHealth('Resolver');
    assert.equal(health?.status, 'On');
    assert.equal(health?.lastProbeMessageId, null);
    assert.ok((health?.roundTripMs ?? -1) >= 1000, 'round trip measured from the probe send time');
  });
});

describe('bad data is dead-lettered with a reason or recorded, and never blocks its session', () => {
  test('unknown type, missing EventId, missing endpoint, unkeyable endpoint; unreadable body recorded; the session goes on', async () => {
    const ep = uniq('crm');
    const session = uniq('bad');
    const ev = uniq('e');
    const good = uniq('e');
    const sent = await run(
      { type: 'Bogus', eventId: ev, to: ep, sessionId: session },
      { type: T.EventRequest, to: ep, sessionId: session },
      { type: T.ResolutionResponse, eventId: ev, sessionId: session },
      { type: T.EventRequest, eventId: ev, to: 'not an endpoint!', sessionId: session },
      { type: T.EventRequest, eventId: ev, to: ep, from: 'shop', sessionId: session, body: '{not json', props: { [Prop.RetryCount]: 'x' } },
      { type: T.ResolutionResponse, eventId: good, from: ep, sessionId: session },
    );
    assert.deepEqual(
      sent.map((s) => settlementOf(s.messageId)[0]),
      ['deadLetter', 'deadLetter', 'deadLetter', 'deadLetter', 'written', 'written'],
    );
    const dead = await eventually(async () => {
      const d = await h.deadLetters();
      return d.length >= 4 ? d : undefined;
    }, 'four dead letters');
    const reasons = new Map(dead.map((d) => [String(d.messageId), d.deadLetterReason]));
    assert.equal(reasons.get(sent[0]!.messageId), DeadLetterReason.UnknownMessageType);
    assert.equal(reasons.get(sent[1]!.messageId), DeadLetterReason.MissingEventId);
    assert.equal(reasons.get(sent[2]!.messageId), DeadLetterReason.MissingEndpoint);
    assert.equal(reasons.get(sent[3]!.messageId), DeadLetterReason.InvalidMessage);
    for (const d of dead) assert.ok((d.deadLetterErrorDescription ?? '').length > 0, 'every dead letter says why');

    const recorded = await h.store.getStatusRow(ep, ev, session);
    assert.equal(recorded?.status, 'Pending', 'an unreadable body does not stop the outcome being recorded');
    const entry = (await h.store.listHistory(ev)).items[0];
    assert.equal(entry?.properties.ResolverBodyProblem, 'the body is not valid JSON');
    assert.match(String(entry?.properties.ResolverPropertyProblems), /RetryCount/);
    assert.equal((await h.store.getStatusRow(ep, good, session))?.status, 'Completed', 'the session was not blocked');
  });
});
