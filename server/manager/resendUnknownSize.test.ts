// A re-send of an abandoned claim on a console whose size reads failed (no size read yet on any topic the command
// passes: the Manager, endpoint and Resolver topics were not there when it read them - the read is retried after
// 60 s). The claim's command was accepted once, against a limit known then (here: a Premium-like namespace, every topic
// reporting 1024 KB, the emulator taking 1 MiB): the re-send is not refused by the console's guess (the Standard
// tier's 256 KB) but sent, and the broker decides. Through the real routes on the embedded emulator and Cosmos: the
// operator's repeat of an edited 300 KB resubmit and Reconcile's re-send of a stored 300 KB one are sent - before,
// both were answered 413 at 256 KB for up to 60 s, though the broker takes them. A fresh 300 KB command on the same
// console is still refused 413 at 256 KB (nothing claimed), and a re-send larger than the broker takes (1.1 MB) is
// the broker's refusal (MessageSizeExceeded), answered 413 "larger than Service Bus accepts": nothing sent, the claim
// kept, the refusal audited CommandNotSent, and the answer says the way out (restore, then a smaller one).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AuditType } from '../../lib/store/index.ts';
import { MessageType, Topic } from '@nimbus/sdk/contract';
import { deriveTopology, provisionTopology } from '@nimbus/sdk/topology';
import { statusRowId } from '../../lib/store/ids.ts';
import { CONTAINERS } from '../../lib/store/store.ts';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { messagesOnBroker } from '../testing/brokerCount.ts';
import { seedEvent } from '../testing/seed.ts';
import { MAX_SENT_BODY_BYTES } from '../messageSize.ts';
import { claimExpectation, claimWrite, CLAIM_GRACE_MS } from './manager.ts';
import type { CommandSpec } from './commands.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const TOPICS = [Topic.Manager, EP, Topic.Resolver];
const stack = useConsoleStack({
  database: 'resendunknownsize',
  emulator: { maxMessageSizeBytes: 1024 * 1024 },
  prepare: async (s) => {
    // The console reads each topic's size while the topics are gone (404: a failure retried after 60 s) ...
    for (const topic of TOPICS) await s.serviceBus.admin.deleteTopic(topic);
    const ctx = await (await import('../context.ts')).getContext();
    await ctx.commandMessageSize.bytes(EP);
    await ctx.commandMessageSize.idle();
    // ... and they are back, each reporting 1024 KB, before the re-sends.
    await provisionTopology(s.serviceBus.admin, deriveTopology(s.catalog), { subscriptionDefaults: { lockDuration: 'PT5S', maxDeliveryCount: 10 } });
    for (const topic of TOPICS) await s.serviceBus.admin.updateTopic({ ...(await s.serviceBus.admin.getTopic(topic)), maxMessageSizeInKilobytes: 1024 });
  },
});

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const post = (body?: unknown) =>
  new Request('http://127.0.0.1/api/x', { method: 'POST', headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
const order = (orderId: string, bytes: number) => ({ orderId, customerId: 'CUST-1', lines: [{ sku: 'x'.repeat(bytes), quantity: 1, unitPrice: 1 }], total: 1, currency: 'EUR' });

/** The console's sizes are still unread (the 60 s back-off not over): else the test would prove nothing. */
async function assertSizesUnread() {
  const ctx = await (await import('../context.ts')).getContext();
  assert.equal(await ctx.brokerMessageSize.known(), undefined, "the Manager topic's size is not read (its read failed)");
  assert.equal(await ctx.commandMessageSize.bytes(EP), 256 * 1024, "fresh commands are held to the Standard tier's fallback");
}

/** A failed event and an abandoned claim of `spec` on it carrying `sent` (no send, no receipt, older than the grace). */
async function abandonedClaim(eventId: string, payload: Record<string, unknown>, spec: (p: Record<string, unknown>) => CommandSpec, sent: Record<string, unknown>) {
  const e = await seedEvent(stack.store, Date.now() - 120_000, { endpointId: EP, eventId, sessionId: `S-${eventId}`, eventTypeId: 'OrderPlaced', payload }, MessageType.ErrorResponse, { errorText: 'boom' });
  const row = (await stack.store.getStatusRow(EP, e.eventId, e.sessionId))!;
  assert.equal((await stack.store.writeStatus(claimWrite(spec(sent), row, row.lastMessageId, 'OrderPlaced', sent), claimExpectation(row))).outcome, 'written');
  const item = stack.store.database.container(CONTAINERS.events).item(statusRowId(e.eventId, e.sessionId), [EP, e.eventId]);
  const { resource } = await item.read<{ updatedAt: string }>();
  await item.replace({ ...resource!, updatedAt: new Date(Date.parse(resource!.updatedAt) - 2 * CLAIM_GRACE_MS).toISOString() });
  const claim = (await stack.store.getStatusRow(EP, e.eventId, e.sessionId))!;
  return { ...e, claimId: claim.lastMessageId };
}

const reconcileRepair = (e: { eventId: string; sessionId: string; claimId: string }, action: 'resend' | 'restore') => ({
  repairs: [{ endpointId: EP, eventId: e.eventId, sessionId: e.sessionId, rowMessageId: e.claimId, kind: 'claim', action }],
});

describe('a re-send of an accepted claim while the topic sizes are not known', () => {
  test('a fresh 300 KB resubmit is still refused 413 at the Standard 256 KB, nothing claimed or sent', async () => {
    await assertSizesUnread();
    const e = await seedEvent(stack.store, Date.now() - 60_000, { endpointId: EP, eventId: 'ORD-fresh', sessionId: 'S-fresh', eventTypeId: 'OrderPlaced', payload: order('ORD-fresh', 10) }, MessageType.ErrorResponse, { errorText: 'boom' });
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: order(e.eventId, 300_000), lastMessageId: e.lastMessageId }), params({ endpointId: EP, eventId: e.eventId }));
    const body = (await res.json()) as { detail: string };
    assert.equal(res.status, 413, JSON.stringify(body).slice(0, 500));
    assert.match(body.detail, new RegExp(`at most ${MAX_SENT_BODY_BYTES} bytes are \\(Service Bus's 256 KB message limit`));
    assert.deepEqual([(await stack.store.getStatusRow(EP, e.eventId, e.sessionId))?.status], ['Failed'], 'nothing claimed');
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
  });

  test("the operator's repeat of an edited 300 KB resubmit is sent, its receipt written", async () => {
    await assertSizesUnread();
    const big = order('ORD-repeat', 300_000);
    const e = await abandonedClaim('ORD-repeat', order('ORD-repeat', 10), (p) => ({ kind: 'resubmit', edited: { payload: p, eventTypeId: 'OrderPlaced' } }), big);
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const res = await resubmit.POST(post({ payload: big, lastMessageId: e.lastMessageId }), params({ endpointId: EP, eventId: e.eventId }));
    const body = (await res.json()) as { outcome?: string; messageId?: string };
    assert.equal(res.status, 200, JSON.stringify(body).slice(0, 500));
    assert.deepEqual([body.outcome, body.messageId], ['sent', e.claimId], "the claim's command, under its own id");
    assert.ok(messagesOnBroker(stack.emulator.broker) > onBroker, 'the command is on the broker');
    assert.ok(await stack.store.getAudit(e.eventId, e.claimId), 'its receipt written');
  });

  test("Reconcile's re-send of a stored 300 KB payload is sent", async () => {
    await assertSizesUnread();
    const e = await abandonedClaim('ORD-resend', order('ORD-resend', 300_000), () => ({ kind: 'resubmit' }), order('ORD-resend', 300_000));
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const res = await reconcile.POST(post(reconcileRepair(e, 'resend')));
    assert.equal(res.status, 200, (await res.clone().text()).slice(0, 500));
    const out = (await res.json()) as { repairs: Array<{ outcome: string; reason?: string }> };
    assert.equal(out.repairs[0]?.outcome, 'repaired', JSON.stringify(out.repairs[0]).slice(0, 500));
    assert.ok(messagesOnBroker(stack.emulator.broker) > onBroker, 'the command is on the broker');
    assert.ok(await stack.store.getAudit(e.eventId, e.claimId), 'its receipt written');
  });

  test("a re-send larger than the broker takes is the broker's refusal: 413, nothing sent, the claim kept, CommandNotSent, restore named", async () => {
    await assertSizesUnread();
    const huge = order('ORD-huge', 1_100_000);
    const e = await abandonedClaim('ORD-huge', huge, () => ({ kind: 'resubmit' }), huge);
    const onBroker = messagesOnBroker(stack.emulator.broker);
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const res = await reconcile.POST(post(reconcileRepair(e, 'resend')));
    assert.equal(res.status, 200, (await res.clone().text()).slice(0, 500));
    const out = (await res.json()) as { repairs: Array<{ outcome: string; reason?: string }> };
    assert.equal(out.repairs[0]?.outcome, 'unchanged', JSON.stringify(out.repairs[0]).slice(0, 500));
    assert.match(out.repairs[0]!.reason ?? '', /^not re-sent: the command is larger than Service Bus accepts; nothing was sent .*restore the event in Operations → Reconcile, then send a smaller one/);
    assert.equal(messagesOnBroker(stack.emulator.broker), onBroker, 'nothing sent');
    const row = await stack.store.getStatusRow(EP, e.eventId, e.sessionId);
    assert.deepEqual([row?.status, row?.lastMessageId], ['Pending', e.claimId], 'the claim kept');
    const audits = (await stack.store.listAudits(e.eventId)).items;
    assert.deepEqual(audits.map((a) => a.type), [AuditType.CommandNotSent], 'the refusal audited, no receipt');
    assert.equal(JSON.parse(audits[0]!.data ?? '{}').brokerRefused, true);
  });
});
