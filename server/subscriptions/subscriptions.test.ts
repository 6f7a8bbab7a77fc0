// Topology → Subscriptions on the embedded stack (real @azure/service-bus clients on the emulator, real Cosmos
// client on the embedded server): overview with rule comparison, dead-letter peek, replay that keeps the
// MessageId and strips the throttle/dead-letter properties, a failed send that leaves the dead letter in place,
// pause/resume, rule restore and purge.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, Prop, Topic } from '@nimbus/sdk/contract';
import { deriveTopology } from '@nimbus/sdk/topology';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { sendAndDeadLetter } from '../testing/resolverDeadLetter.ts';
import { deadLetterOnMain } from './testing/mainDeadLetters.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { peekDeadLetters, purgeDeadLetters } from './deadLetters.ts';
import { listTopology } from './overview.ts';
import { previewReplay, replayDeadLetters, TOPOLOGY_AUDIT_EVENT, operationDocName, type ReplayOperation } from './replay.ts';
import { ReplayJournal } from './replayJournal.ts';
import { requireConfirmation, restoreRules, setReceiving } from './manage.ts';
import { sqlFilterMatches } from './ruleMatch.ts';

let stack: ConsoleTestStack;
let docs: PlatformDocs;
let journal: ReplayJournal;

before(async () => {
  stack = await startConsoleTestStack();
  docs = new PlatformDocs({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'nimbus' });
  journal = new ReplayJournal(stack.store.database);
});
after(async () => {
  docs?.close();
  await stack?.close();
});

/** Puts one message on the Resolver topic and dead-letters it from the Resolver subscription, as the Resolver does. */
async function resolverDeadLetter(reason: string): Promise<{ messageId: string; eventId: string }> {
  const messageId = randomUUID();
  const eventId = randomUUID();
  await sendAndDeadLetter(
    stack.serviceBus.client,
    {
      messageId,
      sessionId: `s-${randomUUID()}`,
      body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-1', note: '<b>x</b>' })),
      applicationProperties: { [Prop.To]: 'billingendpoint', [Prop.From]: 'storefrontendpoint', [Prop.MessageType]: 'ResolutionResponse', [Prop.EventId]: eventId, [Prop.ThrottleRetryCount]: 7, [Prop.OriginalEnqueuedTimeUtc]: new Date(Date.now() - 60_000).toISOString() },
    },
    { deadLetterReason: reason, deadLetterErrorDescription: 'store throttled 10 times' },
  );
  return { messageId, eventId };
}

describe('subscriptions', () => {
  test('the rule evaluator answers the topology forms and refuses to guess the rest', () => {
    const props = { To: 'shop', MessageType: 'EventRequest', EventTypeId: 'X' };
    assert.equal(sqlFilterMatches("user.To = 'shop'", props), 'yes');
    assert.equal(sqlFilterMatches("user.To = 'Resolver'", props), 'no');
    assert.equal(sqlFilterMatches("user.EventTypeId = 'X' AND user.MessageType = 'EventRequest' AND user.From IS NULL", props), 'yes');
    assert.equal(sqlFilterMatches("user.EventTypeId = 'X' AND user.From IS NOT NULL", props), 'no');
    assert.equal(sqlFilterMatches('1=1', props), 'yes');
    assert.equal(sqlFilterMatches("user.To LIKE 's%'", props), 'unknown');
  });

  test('the overview lists every topic and subscription with counts and no rule drift after provisioning', async () => {
    const topics = await listTopology(stack.serviceBus.admin, deriveTopology(stack.catalog));
    const names = topics.map((t) => t.name);
    assert.ok(names.includes('Resolver') && names.includes('Manager') && names.includes('billingendpoint'));
    const main = topics.find((t) => t.name === 'billingendpoint')!.subscriptions.find((s) => s.name === 'billingendpoint')!;
    assert.equal(main.requiresSession, true);
    assert.equal(main.inTopology, true);
    assert.deepEqual(main.missingRules, []);
    assert.deepEqual(main.extraRules, []);
    assert.equal(typeof main.counts.deadLetter, 'number');
  });

  test('a Resolver dead letter is peeked, previewed and replayed: queue empty, MessageId kept, properties stripped, audited', async () => {
    const { messageId, eventId } = await resolverDeadLetter('CosmosDbThrottled');
    const other = await resolverDeadLetter('SomethingElse');

    const page = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver, { reason: 'CosmosDbThrottled' });
    assert.equal(page.items.length, 1);
    const dl = page.items[0]!;
    assert.equal(dl.messageId, messageId);
    assert.equal(dl.description, 'store throttled 10 times');
    assert.match(dl.body, /<b>x<\/b>/);

    const sel = { all: true, reason: 'CosmosDbThrottled' };
    const preview = await previewReplay(stack.serviceBus.client, stack.serviceBus.admin, journal, Topic.Resolver, Topic.Resolver, sel);
    assert.equal(preview.count, 1);
    assert.deepEqual(preview.alsoReaches, [], 'the Resolver topic has one subscription');

    const progress: ReplayOperation[] = [];
    const op = await replayDeadLetters(
      { client: stack.serviceBus.client, store: stack.store, journal, docs },
      { topic: Topic.Resolver, subscription: Topic.Resolver, selection: sel, auditor: 'tester' },
      (p) => progress.push(p),
    );
    assert.equal(op.state, 'done');
    assert.equal(op.replayed, 1);
    assert.equal(op.failed, 0);
    assert.ok(progress.some((p) => p.state === 'running'));
    const stored = await docs.read<ReplayOperation>(operationDocName(op.id));
    assert.equal(stored?.value.state, 'done');
    assert.equal(stored?.value.replayed, 1);

    // Only the other dead letter is left.
    const left = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver);
    assert.deepEqual(left.items.map((i) => i.messageId), [other.messageId]);

    // The copy is on the Resolver subscription with the same MessageId and a fresh budget.
    const receiver = await stack.serviceBus.client.acceptNextSession(Topic.Resolver, Topic.Resolver, { maxAutoLockRenewalDurationInMs: 0 });
    const [copy] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    assert.ok(copy);
    assert.equal(copy.messageId, messageId);
    assert.equal(copy.applicationProperties?.[Prop.ThrottleRetryCount], undefined);
    // Its original time goes with the budget: the replay is a new delivery, recorded at its own broker time (kept, it
    // was named a property problem on the replay's history entry, ThrottleRetryCount being gone).
    assert.equal(copy.applicationProperties?.[Prop.OriginalEnqueuedTimeUtc], undefined);
    assert.equal(copy.applicationProperties?.[Prop.DeadLetterReason], undefined);
    assert.equal(copy.applicationProperties?.[Prop.DeadLetterErrorDescription], undefined);
    assert.equal(copy.applicationProperties?.[Prop.EventId], eventId);
    assert.equal(copy.deadLetterReason, undefined);
    await receiver.completeMessage(copy);
    await receiver.close();

    const audits = await stack.store.listAudits(TOPOLOGY_AUDIT_EVENT, { pageSize: 100 });
    assert.ok(audits.items.some((a) => a.type === 'ReplayDeadLetters' && a.id === `replay-${op.id}`));
    const eventAudits = await stack.store.listAudits(eventId, { pageSize: 10 });
    assert.equal(eventAudits.items.filter((a) => a.type === 'ReplayDeadLetter').length, 1);

    assert.equal(await purgeDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver), 1);
  });

  test('a replay whose send fails leaves the dead letter in the queue', async () => {
    const { messageId } = await resolverDeadLetter('CosmosDbThrottled');
    const topic = await stack.serviceBus.admin.getTopic(Topic.Resolver);
    await stack.serviceBus.admin.updateTopic({ ...topic, status: 'SendDisabled' });
    try {
      const op = await replayDeadLetters(
        { client: stack.serviceBus.client, store: stack.store, journal },
        { topic: Topic.Resolver, subscription: Topic.Resolver, selection: { all: true }, auditor: 'tester' },
      );
      assert.equal(op.replayed, 0);
      assert.ok(op.failed >= 1);
      assert.equal(op.uncertain, 0, 'a send the broker refused is certain: not uncertain');
      assert.equal(op.state, 'failed');
    } finally {
      const t = await stack.serviceBus.admin.getTopic(Topic.Resolver);
      await stack.serviceBus.admin.updateTopic({ ...t, status: 'Active' });
    }
    const left = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver);
    assert.deepEqual(left.items.map((i) => i.messageId), [messageId]);
    // The refused send released its claim, so the dead letter is replayable as new (not uncertain).
    assert.equal(await journal.get({ topic: Topic.Resolver, subscription: Topic.Resolver, sequenceNumber: left.items[0]!.sequenceNumber, messageId }), null);
    const pv = await previewReplay(stack.serviceBus.client, stack.serviceBus.admin, journal, Topic.Resolver, Topic.Resolver, { all: true });
    assert.deepEqual([pv.count, pv.toSend, pv.uncertain, pv.alreadySent], [1, 1, 0, 0]);
    assert.equal(await purgeDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver), 1);
  });

  test("a replay whose sender's close never ends still ends: its close is bounded", async () => {
    const { messageId } = await resolverDeadLetter('CosmosDbThrottled');
    // The real client and sender, except that the close never settles, as rhea's close does when the connection
    // drops while the broker has not answered it (packages/sdk boundedClose.ts). The real close runs afterwards.
    const realCloses: Array<() => Promise<void>> = [];
    const sendClient = {
      createSender: (topic: string) => {
        const sender = stack.serviceBus.client.createSender(topic);
        realCloses.push(sender.close.bind(sender));
        sender.close = () => new Promise<void>(() => undefined);
        return sender;
      },
    } as unknown as typeof stack.serviceBus.client;
    let timer: NodeJS.Timeout | undefined;
    try {
      const replay = replayDeadLetters(
        { client: stack.serviceBus.client, sendClient, store: stack.store, journal, closeTimeoutMs: 100 },
        { topic: Topic.Resolver, subscription: Topic.Resolver, selection: { all: true }, auditor: 'tester' },
      );
      // Bounds the wait so the old code (an unbounded close) fails here instead of hanging the file.
      const op = await Promise.race([replay, new Promise<'still running'>((r) => (timer = setTimeout(() => r('still running'), 30_000)))]);
      assert.notEqual(op, 'still running', 'the replay waited for ever on its sender close');
      assert.deepEqual(typeof op === 'string' ? op : { state: op.state, replayed: op.replayed }, { state: 'done', replayed: 1 });
    } finally {
      clearTimeout(timer);
      await Promise.all(realCloses.map((c) => c().catch(() => undefined)));
    }
    const audits = await stack.store.listAudits(TOPOLOGY_AUDIT_EVENT, { pageSize: 100 });
    assert.ok(audits.items.some((a) => a.type === 'ReplayDeadLetters' && a.comment?.includes('1 replayed')), 'audited after the close');
    // The copy went out: take it off the Resolver subscription so later tests do not meet it.
    const receiver = await stack.serviceBus.client.acceptNextSession(Topic.Resolver, Topic.Resolver, { maxAutoLockRenewalDurationInMs: 0 });
    const [copy] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
    assert.equal(copy?.messageId, messageId);
    await receiver.completeMessage(copy!);
    await receiver.close();
  });

  test('dead letters page by sequence number', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await resolverDeadLetter(`R${i}`)).messageId);
    const first = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver, { pageSize: 2 });
    assert.deepEqual(first.items.map((i) => i.messageId), ids.slice(0, 2));
    assert.ok(first.next);
    const second = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver, { pageSize: 2, from: first.next });
    assert.deepEqual(second.items.map((i) => i.messageId), ids.slice(2));
    const filtered = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver, { pageSize: 2, reason: 'R2' });
    assert.deepEqual(filtered.items.map((i) => i.messageId), [ids[2]]);
    assert.equal(await purgeDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver), 3);
  });

  test('a dead letter of an endpoint subscription: the preview names the other subscriptions its copy reaches', async () => {
    const ep = 'billingendpoint';
    const message = { messageId: randomUUID(), body: Buffer.from('{}'), applicationProperties: { [Prop.To]: ep, [Prop.MessageType]: 'EventRequest', [Prop.EventId]: 'e-1' } };
    await deadLetterOnMain(stack.serviceBus.client, ep, [{ message, reason: 'HandlerFailed' }], 'boom');
    const preview = await previewReplay(stack.serviceBus.client, stack.serviceBus.admin, journal, ep, ep, { all: true });
    assert.equal(preview.count, 1);
    assert.deepEqual(preview.alsoReaches, [{ subscription: 'Resolver', count: 1, certain: true }]);
    assert.equal(await purgeDeadLetters(stack.serviceBus.client, ep, ep), 1);
  });

  test('pause/resume and rule restore need the typed name, change the broker and are audited', async () => {
    const ref = { topic: 'crmendpoint', subscription: 'Retry' };
    assert.throws(() => requireConfirmation(ref, 'retry'), (e: { detail?: string }) => /type the subscription name/.test(e.detail ?? ''));
    requireConfirmation(ref, 'Retry');
    const paused = await setReceiving(stack.serviceBus.admin, stack.store, ref, true, 'tester');
    assert.equal(paused.status, 'ReceiveDisabled');
    assert.equal((await stack.serviceBus.admin.getSubscription(ref.topic, ref.subscription)).status, 'ReceiveDisabled');
    await setReceiving(stack.serviceBus.admin, stack.store, ref, false, 'tester');
    assert.equal((await stack.serviceBus.admin.getSubscription(ref.topic, ref.subscription)).status, 'Active');

    const model = deriveTopology(stack.catalog);
    const rules = [];
    for await (const r of stack.serviceBus.admin.listRules(ref.topic, ref.subscription)) rules.push(r);
    assert.ok(rules.length > 0);
    await stack.serviceBus.admin.deleteRule(ref.topic, ref.subscription, rules[0]!.name);
    const before = (await listTopology(stack.serviceBus.admin, model)).find((t) => t.name === ref.topic)!.subscriptions.find((s) => s.name === ref.subscription)!;
    assert.deepEqual(before.missingRules.map((r) => r.name), [rules[0]!.name]);
    const restored = await restoreRules(stack.serviceBus.admin, stack.store, model, ref, 'tester');
    assert.deepEqual(restored.restored, [rules[0]!.name]);
    const afterView = (await listTopology(stack.serviceBus.admin, model)).find((t) => t.name === ref.topic)!.subscriptions.find((s) => s.name === ref.subscription)!;
    assert.deepEqual(afterView.missingRules, []);
    const audits = await stack.store.listAudits(TOPOLOGY_AUDIT_EVENT, { pageSize: 100 });
    for (const type of ['PauseSubscription', 'ResumeSubscription', 'RestoreRules']) assert.ok(audits.items.some((a) => a.type === type), type);
  });
});
