// A resubmit whose command is larger than the broker accepts, through the real routes (POST /api/event/resubmit/...,
// and the bulk POST /api/event/resubmit) on the embedded emulator and Cosmos: refused 413 naming the limit before
// anything is claimed - the event's row, history and audit trail are as they were and nothing reached the broker.
// Before, only handoff settlements were checked before their claim: a resubmit was claimed (the event shown "being
// sent"), the broker refused it, the claim was undone and a CommandNotSent entry was written into the audit trail.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { MAX_SENT_BODY_BYTES } from '../messageSize.ts';
import { EP, order, params, post, useTooLargeStack } from './testing/tooLargeOrders.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const { stack, failedOrder, snapshot } = useTooLargeStack({ database: 'resubmittoolarge' });

describe('a resubmit too large for the broker', () => {
  test('an edited resubmit of 300 KB is refused 413 naming the limit, nothing claimed, written or sent', async () => {
    const e = await failedOrder('ORD-edit-big', order('ORD-edit-big', 10));
    const before = await snapshot(e.eventId, e.sessionId);
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: order('ORD-edit-big', 300_000), lastMessageId: e.lastMessageId }), params({ endpointId: EP, eventId: e.eventId }));
    const body = (await res.json()) as { detail: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 500));
    assert.deepEqual(await snapshot(e.eventId, e.sessionId), before, 'row, history and audit trail unchanged: no claim, no undo, no CommandNotSent');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
    assert.match(body.detail, new RegExp(`edited payload.*at most ${MAX_SENT_BODY_BYTES} bytes`));
  });

  test('a plain resubmit of a stored 300 KB payload is refused the same way, alone and in a bulk lot', async () => {
    const e = await failedOrder('ORD-stored-big', order('ORD-stored-big', 300_000));
    const before = await snapshot(e.eventId, e.sessionId);
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post(), params({ endpointId: EP, eventId: e.eventId }));
    const body = (await res.json()) as { detail: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 500));
    assert.deepEqual(await snapshot(e.eventId, e.sessionId), before, 'row, history and audit trail unchanged');
    assert.match(body.detail, new RegExp(`stored payload.*at most ${MAX_SENT_BODY_BYTES} bytes`));

    const bulk = await import('../../app/api/event/resubmit/route.ts');
    const many = await bulk.POST(post({ endpointId: EP, eventIds: [e.eventId] }));
    assert.equal(many.status, 200, await many.clone().text());
    const result = (await many.json()) as { sent: number; results: Array<{ eventId: string; status?: number; detail?: string }> };
    assert.equal(result.sent, 0);
    assert.equal(result.results[0]?.status, 413, JSON.stringify(result.results[0]).slice(0, 500));

    assert.deepEqual(await snapshot(e.eventId, e.sessionId), before, 'row, history and audit trail unchanged');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
  });
});
