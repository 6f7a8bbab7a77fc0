// Subscriber notices on the Resolver (issue 12 items 3, 4, 6): a refused command is recorded in history and audit
// and puts back the row the Manager claimed for it - to the session's newest outcome, also on an event whose
// history is past the 2,000 entries a list read stopped at; an ordinary dead-letter notification still dead-letters
// the row.
// Messages on the Resolver topic of the embedded emulator, recorded in the embedded Cosmos server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { BulkOperationType, type JSONObject } from '@azure/cosmos';
import { eventBody, isHistoryOnly, MessageType as T, Prop } from '@nimbus/sdk/contract';
import { CONTAINERS } from '../lib/store/store.ts';
import { docId } from '../lib/store/ids.ts';
import { ResolverHarness, eventually, orderBody, type WireMessage } from './testHarness.ts';

let h: ResolverHarness;
before(async () => {
  h = await ResolverHarness.start();
  h.resolver();
});
after(async () => {
  await h.close();
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

async function settled(messageId: string): Promise<void> {
  await eventually(
    () => (h.settled.some((s) => s.messageId === messageId && s.ok) ? true : undefined),
    `settlement of ${messageId}`,
  );
}

/** A handoff park recorded by the Resolver, then claimed by the Manager for a completion (as the console does). */
async function claimedHandoff(ep: string, ev: string): Promise<{ park: string; claim: string }> {
  const req = await h.send({
    type: T.EventRequest,
    eventId: ev,
    to: ep,
    from: 'shop',
    body: orderBody({ orderId: 'A-1' }),
  });
  await settled(req.messageId);
  const park = await h.send({
    type: T.PendingHandoffResponse,
    eventId: ev,
    from: ep,
    to: 'Resolver',
    parentMessageId: req.messageId,
    props: { [Prop.HandoffReason]: 'DMF import', [Prop.ExternalJobId]: 'job-1' },
  });
  await settled(park.messageId);
  const claim = uniq('cmd');
  const written = await h.store.writeStatus(
    {
      endpointId: ep,
      eventId: ev,
      sessionId: 's-1',
      messageId: claim,
      messageType: T.HandoffCompletedRequest,
      parentMessageId: park.messageId,
      from: 'Manager',
      to: ep,
      enqueuedAt: new Date().toISOString(),
    },
    { lastMessageId: park.messageId, claim: true },
  );
  assert.equal(written.outcome, 'written');
  return { park: park.messageId, claim };
}

/**
 * The claimed completion's copy (From = Manager) and the subscriber's refusal notice, as they reach the Resolver;
 * waits until both are settled.
 */
async function refuseClaim(ep: string, ev: string, claim: string, parentMessageId: string, body?: string): Promise<void> {
  const copy = await h.send({ type: T.HandoffCompletedRequest, messageId: claim, eventId: ev, to: ep, from: 'Manager', parentMessageId, ...(body !== undefined ? { body } : {}) });
  const notice = await h.send({
    type: T.ErrorResponse,
    eventId: ev,
    from: ep,
    to: 'Resolver',
    parentMessageId: claim,
    props: {
      [Prop.DeadLetterReason]: 'CommandRefused',
      [Prop.DeadLetterErrorDescription]: 'HandoffCompletedRequest refused: not the pending handoff',
    },
  });
  await settled(copy.messageId);
  await settled(notice.messageId);
}

/**
 * `count` failures of session s-1 on `ep`, a day before now, written straight into the event's history in batches of
 * 100 (one transactional batch per partition, as the store's own batch): a long event in seconds, not one message
 * through the Resolver each.
 */
async function seedOldFailures(ep: string, ev: string, count: number): Promise<void> {
  const history = h.store.database.container(CONTAINERS.history);
  const since = Date.now() - 86_400_000;
  for (let start = 0; start < count; start += 100) {
    const lot = Array.from({ length: Math.min(100, count - start) }, (_, k) => {
      const messageId = `${ev}-old-${start + k}`;
      const entry = {
        id: docId(messageId),
        endpointId: ep,
        eventId: ev,
        messageId,
        messageType: T.ErrorResponse,
        sessionId: 's-1',
        from: ep,
        to: 'Resolver',
        enqueuedAt: new Date(since + (start + k) * 1000).toISOString(),
        recordedAt: new Date().toISOString(),
        errorText: `old failure ${start + k}`,
      };
      return { operationType: BulkOperationType.Create, resourceBody: entry as unknown as JSONObject };
    });
    const { result } = await history.items.batch(lot, ev);
    assert.ok(result?.every((r) => r.statusCode === 201), `batch at ${start} created`);
  }
}

describe('subscriber notices', () => {
  test("a refused handoff completion puts the Manager's claim back to the handoff park, with a CommandRefused audit", async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const { claim } = await claimedHandoff(ep, ev);
    await refuseClaim(ep, ev, claim, 'x');
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.deepEqual(
      [row?.status, row?.subStatus, row?.handoffReason, row?.externalJobId],
      ['Pending', 'Handoff', 'DMF import', 'job-1'],
    );
    const audits = (await h.store.listAudits(ev)).items;
    assert.deepEqual(
      audits.map((a) => a.type),
      ['CommandRefused'],
    );
    assert.match(
      audits[0]!.comment ?? '',
      /not the pending handoff; the row was put back to Pending \(Handoff\)$/,
    );
    const counts = await h.store.getCounts(ep);
    assert.deepEqual([counts.pending, counts.handoff, counts.deadLettered], [1, 1, 0]);
    assert.deepEqual((await h.store.listHistory(ev)).items.map((i) => i.messageType).sort(), [
      'ErrorResponse',
      'EventRequest',
      'HandoffCompletedRequest',
      'PendingHandoffResponse',
    ]);
  });

  test('handoff settlement: a refused completion with a note leaves the event\'s payload on the row; the note stays in the command\'s history entry', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const { park, claim } = await claimedHandoff(ep, ev);
    const before = await h.store.getStatusRow(ep, ev, 's-1');
    assert.deepEqual(before?.payload, { orderId: 'A-1' });
    // The completion as the Manager builds it for a note (commands.ts: { note, completedBy } as the event content).
    const note = { note: 'imported ok', completedBy: 'alice' };
    await refuseClaim(ep, ev, claim, park, eventBody('OrderPlaced', note));
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.deepEqual([row?.status, row?.subStatus], ['Pending', 'Handoff']);
    // Before, the recorded completion wrote the note as the row's payload and the restore kept it: a Resubmit of the
    // handoff then sent { note, completedBy } to the handler as the event.
    assert.deepEqual(row?.payload, { orderId: 'A-1' }, 'the event, not the refused completion\'s note');
    assert.equal(row?.requestMessageId, before?.requestMessageId, 'the payload is still the event request\'s');
    assert.deepEqual((await h.store.getHistory(ev, claim))?.payload, note, 'the timeline still shows what the completion carried');
  });

  test('handoff settlement: a completed handoff keeps the event\'s payload on its row; its result is in the history', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const { park, claim } = await claimedHandoff(ep, ev);
    const result = { invoiceId: 'INV-9' };
    const copy = await h.send({ type: T.HandoffCompletedRequest, messageId: claim, eventId: ev, to: ep, from: 'Manager', parentMessageId: park, body: eventBody('OrderPlaced', result) });
    await settled(copy.messageId);
    const done = await h.send({ type: T.ResolutionResponse, eventId: ev, from: ep, to: 'Resolver', parentMessageId: claim, body: eventBody('OrderPlaced', result) });
    await settled(done.messageId);
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.equal(row?.status, 'Completed');
    assert.deepEqual(row?.payload, { orderId: 'A-1' });
    assert.deepEqual((await h.store.getHistory(ev, claim))?.payload, result);
  });

  test('on an event past 2,000 history entries, a refusal puts the row back to its newest outcome, not an old one', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const { park, claim } = await claimedHandoff(ep, ev);
    await seedOldFailures(ep, ev, 2100);
    // Precondition: the history's oldest 2,000 entries (what a list read up to that cap returns) are all the old
    // failures, so the newest outcome - the handoff park - is not among them.
    const oldest: string[] = [];
    let token: string | undefined;
    do {
      const page = await h.store.listHistory(ev, { pageSize: 200, continuationToken: token });
      oldest.push(...page.items.map((i) => i.messageId));
      token = page.continuationToken;
    } while (token && oldest.length < 2000);
    assert.ok(oldest.length >= 2000 && !oldest.includes(park), 'the park is past the oldest 2,000 entries');

    await refuseClaim(ep, ev, claim, park);
    const row = await h.store.getStatusRow(ep, ev, 's-1');
    assert.deepEqual(
      [row?.status, row?.subStatus, row?.messageType, row?.externalJobId, row?.errorText],
      ['Pending', 'Handoff', 'PendingHandoffResponse', 'job-1', null],
      'put back to the handoff park, the newest outcome, not to an old failure',
    );
    const audits = (await h.store.listAudits(ev)).items.filter((a) => a.type === 'CommandRefused');
    assert.equal(audits.length, 1);
    assert.match(audits[0]!.comment ?? '', /the row was put back to Pending \(Handoff\)$/);
  });

  /**
   * A claimed handoff completion, then `historyOnly` (built from the event and its park) on the Resolver topic after
   * the park and before the claim's refusal, then the refusal. Returns the row after the Resolver's restore and the
   * history-only message's stored entry.
   */
  async function refusedAfter(historyOnly: (ep: string, ev: string, park: string) => WireMessage) {
    const ep = uniq('crm');
    const ev = uniq('e');
    const { park, claim } = await claimedHandoff(ep, ev);
    const sent = await h.send(historyOnly(ep, ev, park));
    await settled(sent.messageId);
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.lastMessageId, claim, 'the history-only message did not write the row');
    const stored = await h.store.getHistory(ev, sent.messageId);
    await refuseClaim(ep, ev, claim, park);
    return { row: await h.store.getStatusRow(ep, ev, 's-1'), stored };
  }

  test('a history-only entry is no outcome to restore: a dead-lettered deferred-processor trigger after the park leaves the restore on the park', async () => {
    // The deferred processor's trigger, dead-lettered on the way: history only, the Resolver never writes the row
    // from it (isHistoryOnly).
    const { row } = await refusedAfter((ep, ev) => ({
      type: T.ProcessDeferredRequest,
      eventId: ev,
      to: ep,
      from: ep,
      props: { [Prop.ReplayUntil]: 5, [Prop.SessionId]: 's-1', [Prop.DeadLetterReason]: 'MaxDeliveryCountExceeded', [Prop.DeadLetterErrorDescription]: 'gave up' },
    }));
    assert.deepEqual([row?.status, row?.subStatus], ['Pending', 'Handoff'], 'put back to the park the row showed, not to a state it never had');
  });

  test('a Manager-only command replayed by hand (no From, OriginatingFrom Manager, dead-lettered) is history-only on its entry too: the restore stays on the park', async () => {
    // A dead letter put back on the Resolver topic by hand: From gone, OriginatingFrom kept. The Resolver judges it
    // by its From (none: not the Manager's, refused by the subscriber) and never writes the row; its stored entry
    // must be judged the same (before, recorded under From "Manager", the restore took it for a DeadLettered outcome).
    const { row, stored } = await refusedAfter((ep, ev, park) => ({
      type: T.ResubmissionRequest,
      eventId: ev,
      to: ep,
      parentMessageId: park,
      props: { [Prop.OriginatingFrom]: 'Manager', [Prop.DeadLetterReason]: 'MaxDeliveryCountExceeded', [Prop.DeadLetterErrorDescription]: 'gave up' },
    }));
    assert.equal(stored && isHistoryOnly(stored), true, `its stored entry is history-only as the message was (recorded From ${stored?.from})`);
    assert.deepEqual(
      [row?.status, row?.subStatus, row?.messageType, row?.externalJobId],
      ['Pending', 'Handoff', 'PendingHandoffResponse', 'job-1'],
      'put back to the park, not to the replayed command as DeadLettered',
    );
  });

  test('a refusal for a row that moved on changes nothing; an ordinary dead-letter notification still dead-letters', async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const req = await h.send({
      type: T.EventRequest,
      eventId: ev,
      to: ep,
      from: 'shop',
      body: orderBody({ orderId: 'A-2' }),
    });
    const done = await h.send({
      type: T.ResolutionResponse,
      eventId: ev,
      from: ep,
      to: 'Resolver',
      parentMessageId: req.messageId,
    });
    const notice = await h.send({
      type: T.ErrorResponse,
      eventId: ev,
      from: ep,
      to: 'Resolver',
      parentMessageId: 'some-other-command',
      props: {
        [Prop.DeadLetterReason]: 'CommandRefused',
        [Prop.DeadLetterErrorDescription]: 'SkipRequest is accepted only from Manager',
      },
    });
    await settled(done.messageId);
    await settled(notice.messageId);
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'Completed');
    const dead = await h.send({
      type: T.ErrorResponse,
      eventId: ev,
      from: ep,
      to: 'Resolver',
      parentMessageId: req.messageId,
      props: { [Prop.DeadLetterReason]: 'Permanent failure', [Prop.DeadLetterErrorDescription]: 'corrupt' },
    });
    await settled(dead.messageId);
    assert.equal((await h.store.getStatusRow(ep, ev, 's-1'))?.status, 'DeadLettered');
  });
});
