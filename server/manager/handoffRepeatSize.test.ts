// Review 44-b (fixed in manager.ts requireClaimSendable): a repeat of an abandoned handoff-settlement claim carries the REPEAT's own result (the claim's text was
// never stored: #repeat "re-sends it with the repeat's text once abandoned", repeatConflict.ts handoffMismatch). That
// body was never checked against any limit, yet #requireClaimSendable treats it as a re-send "accepted once": with no
// topic size read, it is sent unchecked. A fresh command is held to 256 KB (413 from the pre-check, nothing audited);
// the same oversize result via the repeat goes to the broker, is refused, and leaves a CommandNotSent entry.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { statusRowId } from '../../lib/store/ids.ts';
import { CONTAINERS } from '../../lib/store/store.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { seedEvent } from '../testing/seed.ts';
import { claimExpectation, claimWrite, CLAIM_GRACE_MS } from './manager.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const TOPICS = [Topic.Manager, EP, Topic.Resolver];
const stack = useConsoleStack({
  database: 'handoffrepeatsize',
  prepare: async (s) => {
    for (const topic of TOPICS) await s.serviceBus.admin.deleteTopic(topic);
    const ctx = await (await import('../context.ts')).getContext();
    await ctx.commandMessageSize.bytes(EP);
    await ctx.commandMessageSize.idle();
    await provisionTopology(s.serviceBus.admin, deriveTopology(s.catalog), { subscriptionDefaults: { lockDuration: 'PT5S', maxDeliveryCount: 10 } });
  },
});

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
const bigResult = { blob: 'x'.repeat(300_000) };

async function pendingHandoff(eventId: string) {
  return seedEvent(stack.store, Date.now() - 120_000, { endpointId: EP, eventId, sessionId: `S-${eventId}`, eventTypeId: 'OrderPlaced', payload: { orderId: eventId } }, MessageType.PendingHandoffResponse, {
    handoffReason: 'queued',
    externalJobId: 'JOB-1',
  });
}

describe('a handoff repeat with a new, oversize result while no size is read', () => {
  test('a fresh 300 KB completion: 413 by the pre-check, nothing audited (control)', async () => {
    const ctx = await (await import('../context.ts')).getContext();
    assert.equal(await ctx.brokerMessageSize.known(), undefined);
    const e = await pendingHandoff('HO-fresh');
    const complete = await import('../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts');
    const res = await complete.POST(post({ result: bigResult }), params({ endpointId: EP, eventId: e.eventId, messageId: e.lastMessageId }));
    assert.equal(res.status, 413);
    assert.deepEqual((await stack.store.listAudits(e.eventId)).items.map((a) => a.type), []);
  });

  test('the repeat of an abandoned completion claim with a 300 KB result is held to 256 KB like a fresh one', async () => {
    const ctx = await (await import('../context.ts')).getContext();
    assert.equal(await ctx.brokerMessageSize.known(), undefined);
    const e = await pendingHandoff('HO-repeat');
    const row = (await stack.store.getStatusRow(EP, e.eventId, e.sessionId))!;
    // The claim was made by a small completion (no result), then abandoned (its sender died).
    const spec = { kind: 'handoffComplete' as const, messageId: row.lastMessageId };
    assert.equal((await stack.store.writeStatus(claimWrite(spec, row, row.lastMessageId, row.eventTypeId, undefined), claimExpectation(row))).outcome, 'written');
    const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(e.eventId, e.sessionId), [EP, e.eventId]);
    const { resource } = await item.read<{ updatedAt: string }>();
    await item.replace({ ...resource!, updatedAt: new Date(Date.parse(resource!.updatedAt) - 2 * CLAIM_GRACE_MS).toISOString() });
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const complete = await import('../../app/api/event/handoff/complete/[endpointId]/[eventId]/[messageId]/route.ts');
    const res = await complete.POST(post({ result: bigResult }), params({ endpointId: EP, eventId: e.eventId, messageId: e.lastMessageId }));
    const body = (await res.json()) as { detail?: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 300));
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
    // The pre-check answers with the limit and writes nothing; the broker's refusal writes CommandNotSent.
    assert.match(body.detail ?? '', /at most \d+ bytes are/, `answered by the pre-check, not the broker: ${body.detail}`);
    assert.deepEqual((await stack.store.listAudits(e.eventId)).items.map((a) => a.type), [], 'no CommandNotSent: nothing was tried');
  });
});
