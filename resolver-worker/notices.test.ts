// Subscriber notices on the Resolver (issue 12 items 3, 4, 6): a refused command is recorded in history and audit
// and puts back the row the Manager claimed for it; an ordinary dead-letter notification still dead-letters the row.
// Messages on the Resolver topic of the embedded emulator, recorded in the embedded Cosmos server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MessageType as T, Prop } from '@nimbus/sdk/contract';
import { ResolverHarness, eventually, orderBody } from './testHarness.ts';

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
    { lastMessageId: park.messageId },
  );
  assert.equal(written.outcome, 'written');
  return { park: park.messageId, claim };
}

describe('subscriber notices', () => {
  test("a refused handoff completion puts the Manager's claim back to the handoff park, with a CommandRefused audit", async () => {
    const ep = uniq('crm');
    const ev = uniq('e');
    const { claim } = await claimedHandoff(ep, ev);
    // The command's copy (From = Manager) and the subscriber's refusal notice, as they reach the Resolver.
    const copy = await h.send({
      type: T.HandoffCompletedRequest,
      messageId: claim,
      eventId: ev,
      to: ep,
      from: 'Manager',
      parentMessageId: 'x',
    });
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
