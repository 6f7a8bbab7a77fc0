// A re-send of an abandoned claim whose command is larger than the broker accepts, through the real routes on the
// embedded emulator and Cosmos (Standard's 256 KB): the Manager's repeat (the operator's Resubmit again, the same
// edit) and Reconcile's re-send (POST /api/operations/reconcile, action resend). Each is refused 413 naming the limit
// before anything is sent, as a fresh command is (resubmitTooLarge.test.ts): the claim row, the history and the audit
// trail are as they were - no CommandNotSent entry - and nothing reaches the broker; Reconcile reports the row
// unchanged, "not re-sent", with the size, the limit and the way out (restore, which then works).
// Before, both sent without the pre-check: the broker refused, a CommandNotSent entry was written on every attempt,
// and the answer said the claim stays "until the command is sent or Reconcile repairs it" - whose re-send was the same
// refusal. Such a claim is one made against a larger limit than the one known now (another replica's read, an
// endpoint topic not yet read) or by a console from before the pre-checks: written here as such a console left it.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import { statusRowId } from '../../lib/store/ids.ts';
import { CONTAINERS } from '../../lib/store/store.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { MAX_SENT_BODY_BYTES } from '../messageSize.ts';
import { claimExpectation, claimWrite, CLAIM_GRACE_MS } from './manager.ts';
import type { CommandSpec } from './commands.ts';
import { EP, order, params, post, useTooLargeStack } from './testing/tooLargeOrders.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const { stack, failedOrder, snapshot } = useTooLargeStack({ database: 'repeattoolarge' });

/**
 * A failed event and the claim of `spec` on it with no send and no receipt (a console that died, or whose send was
 * never made), older than the grace period: abandoned, for a repeat or Reconcile to re-send.
 */
async function abandonedClaim(eventId: string, payload: Record<string, unknown>, spec: (p: Record<string, unknown>) => CommandSpec, sent: Record<string, unknown>) {
  const e = await failedOrder(eventId, payload, 120_000);
  const row = (await stack.store.getStatusRow(EP, e.eventId, e.sessionId))!;
  const written = await stack.store.writeStatus(claimWrite(spec(sent), row, row.lastMessageId, 'OrderPlaced', sent), claimExpectation(row));
  assert.equal(written.outcome, 'written');
  const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(e.eventId, e.sessionId), [EP, e.eventId]);
  const { resource } = await item.read<{ updatedAt: string }>();
  await item.replace({ ...resource!, updatedAt: new Date(Date.parse(resource!.updatedAt) - 2 * CLAIM_GRACE_MS).toISOString() });
  const claim = (await stack.store.getStatusRow(EP, e.eventId, e.sessionId))!;
  assert.deepEqual([claim.status, claim.messageType], ['Pending', MessageType.ResubmissionRequest]);
  return { ...e, claimId: claim.lastMessageId };
}

describe('a re-sent claim too large for the broker', () => {
  test("the operator's repeat of an edited resubmit is refused 413 naming the limit; claim, history and audits unchanged, nothing sent", async () => {
    const big = order('ORD-repeat-big', 300_000);
    const e = await abandonedClaim('ORD-repeat-big', order('ORD-repeat-big', 10), (p) => ({ kind: 'resubmit', edited: { payload: p, eventTypeId: 'OrderPlaced' } }), big);
    const before = await snapshot(e.eventId, e.sessionId);
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: big, lastMessageId: e.lastMessageId }), params({ endpointId: EP, eventId: e.eventId }));
    const body = (await res.json()) as { detail: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 500));
    assert.deepEqual(await snapshot(e.eventId, e.sessionId), before, 'the claim as it was, no CommandNotSent, no receipt');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
    assert.match(body.detail, new RegExp(`edited payload.*at most ${MAX_SENT_BODY_BYTES} bytes.*nothing was sent - its claim stays as it was.*Reconcile`));
  });

  test("Reconcile's re-send of a stored 300 KB payload: not re-sent, saying why and what to do; the restore then works", async () => {
    const e = await abandonedClaim('ORD-resend-big', order('ORD-resend-big', 300_000), () => ({ kind: 'resubmit' }), order('ORD-resend-big', 300_000));
    const before = await snapshot(e.eventId, e.sessionId);
    assert.ok(before.row?.payload, 'the claim keeps the stored payload it would re-send');
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const repair = (action: 'resend' | 'restore') => ({ repairs: [{ endpointId: EP, eventId: e.eventId, sessionId: e.sessionId, rowMessageId: e.claimId, kind: 'claim', action }] });
    const res = await reconcile.POST(post(repair('resend')));
    assert.equal(res.status, 200, (await res.clone().text()).slice(0, 500));
    const out = (await res.json()) as { repaired: number; repairs: Array<{ outcome: string; reason?: string }> };
    assert.equal(out.repairs[0]?.outcome, 'unchanged', JSON.stringify(out.repairs[0]).slice(0, 500));
    assert.deepEqual(await snapshot(e.eventId, e.sessionId), before, 'the claim as it was, no CommandNotSent, no repair audit');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
    assert.match(out.repairs[0]!.reason ?? '', new RegExp(`^not re-sent: .*stored payload.*at most ${MAX_SENT_BODY_BYTES} bytes.*restore the event`));

    const restored = (await (await reconcile.POST(post(repair('restore')))).json()) as { repairs: Array<{ outcome: string }> };
    assert.equal(restored.repairs[0]?.outcome, 'repaired');
    const row = await stack.store.getStatusRow(EP, e.eventId, e.sessionId);
    assert.deepEqual([row?.status, row?.lastMessageId], ['Failed', e.lastMessageId], 'back to the failure, to resubmit smaller');
  });
});
