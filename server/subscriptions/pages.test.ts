// Browser test of the operations pages: the built console (startConsole) on the embedded stack, driven in
// Debian's Chromium by playwright-core, as e2e/console.test.ts does. A Resolver dead letter is produced for real:
// the Resolver's store sits behind a fault proxy that answers 429 until the throttle budget is spent and the
// Resolver dead-letters with CosmosDbThrottled. After the fault stops, the operator replays it from the page:
// the row is recorded, the dead-letter queue is empty and the replayed message kept its MessageId. A dead letter
// whose replay died during its send (journal left in `sending`) is shown as uncertain with its evidence, is not
// sent by "Replay all", and is removed only on the operator's explicit decision.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { pino } from 'pino';
import { Address, encodeBody, MessageType, Prop, Subscription, Topic } from '@nimbus/sdk/contract';
import { createStore } from '../../lib/store/index.ts';
import { startFaultProxy, type FaultProxy } from '../../lib/store/testing/faultProxy.ts';
import { startResolver } from '../../resolver-worker/index.ts';
import { CONSOLE_DIR } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';
import type { ConsoleTestStack } from '../testing/stack.ts';
import { peekDeadLetters } from './deadLetters.ts';
import { deadLetterOnMain } from './testing/mainDeadLetters.ts';
import { TOPOLOGY_AUDIT_EVENT } from './replay.ts';
import { ReplayJournal } from './replayJournal.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;

let ui: SeededConsole | undefined;
let stack: ConsoleTestStack;
let proxy: FaultProxy;
let pageErrors: string[] = [];

const open = (path: string): Promise<Page> => ui!.open(path);

async function eventually<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

before(async () => {
  ui = await startSeededConsole({
    dir: DIR,
    demoData: false,
    // The Resolver writes through the fault proxy; stopped after the console, in reverse order.
    prepare: async ({ stack, defer }) => {
      proxy = await startFaultProxy(stack.cosmos.endpoint);
      defer(() => proxy.close());
      const resolverStore = await createStore({ endpoint: proxy.endpoint, key: stack.cosmos.key, database: 'nimbus' });
      defer(() => resolverStore.close().catch(() => undefined));
      const resolver = startResolver({ client: stack.serviceBus.client, store: resolverStore, sessionIdleTimeoutMs: 200, budget: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 10 }, log: pino({ level: 'silent' }) });
      defer(() => resolver.stop().catch(() => undefined));
    },
  });
  ({ stack, pageErrors } = ui);
});

after(() => ui?.close());

/**
 * Dead-letters `reasons.length` new messages on `topic`'s DeferredProcessor subscription (not sessionful, and
 * nothing consumes it in these tests), in order, the i-th with reason `reasons[i]`; returns their MessageIds.
 */
async function deadLetterOnDeferredProcessor(topic: string, reasons: string[]): Promise<string[]> {
  const ids = reasons.map(() => randomUUID());
  const sender = stack.serviceBus.client.createSender(topic);
  let batch = await sender.createMessageBatch();
  for (const messageId of ids) {
    const m = { messageId, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: Address.DeferredProcessor } };
    if (batch.tryAddMessage(m)) continue;
    await sender.sendMessages(batch);
    batch = await sender.createMessageBatch();
    assert.ok(batch.tryAddMessage(m));
  }
  await sender.sendMessages(batch);
  await sender.close();
  const reasonOf = new Map<string, string>(ids.map((id, i) => [id, reasons[i]!]));
  const receiver = stack.serviceBus.client.createReceiver(topic, Subscription.DeferredProcessor);
  try {
    while (reasonOf.size > 0) {
      for (const m of await receiver.receiveMessages(50, { maxWaitTimeInMs: 5000 })) {
        const reason = reasonOf.get(String(m.messageId));
        if (reason === undefined) {
          await receiver.abandonMessage(m);
          continue;
        }
        // A lock lost on a slow machine: the message comes back and is dead-lettered then.
        const done = await receiver.deadLetterMessage(m, { deadLetterReason: reason, deadLetterErrorDescription: 'seeded' }).then(() => true, () => false);
        if (done) reasonOf.delete(String(m.messageId));
      }
    }
  } finally {
    await receiver.close();
  }
  return ids;
}

describe('operations pages in Chromium', () => {
  test('a Resolver dead letter from store throttling is replayed from the page after the fault stops', async () => {
    const ep = 'billingendpoint';
    const eventId = `evt-${randomUUID().slice(0, 8)}`;
    const sessionId = `s-${randomUUID().slice(0, 8)}`;
    const messageId = randomUUID();
    proxy.inject({ status: 429, retryAfterMs: 1, match: (r) => (r.method === 'PUT' || r.method === 'POST') && r.path.includes('/colls/events/') });
    const sender = stack.serviceBus.client.createSender(Topic.Resolver);
    await sender.sendMessages({
      messageId,
      sessionId,
      body: Buffer.from(encodeBody({})),
      applicationProperties: { [Prop.To]: 'Resolver', [Prop.From]: ep, [Prop.MessageType]: MessageType.ResolutionResponse, [Prop.EventId]: eventId, [Prop.ParentMessageId]: 'req-1', [Prop.OriginatingMessageId]: 'req-1', [Prop.RetryCount]: 0 },
    });
    await sender.close();
    const dead = await eventually('the CosmosDbThrottled dead letter', async () => {
      const page = await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver, { reason: 'CosmosDbThrottled' });
      return page.items.find((d) => d.messageId === messageId);
    });
    assert.ok(dead.applicationProperties[Prop.ThrottleRetryCount] !== undefined, 'the dead letter carries its spent budget');
    proxy.clear();
    assert.equal(await stack.store.getStatusRow(ep, eventId, sessionId), null, 'nothing recorded while throttled');

    const list = await open('/topology/subscriptions');
    const row = list.locator('tr[data-subscription="Resolver/Resolver"]');
    await row.waitFor();
    await row.getByRole('link', { name: '1' }).click();
    await list.waitForURL(/\/topology\/subscriptions\/Resolver\/Resolver$/);
    await list.locator(`[data-dead-letter="${messageId}"]`).waitFor();
    await list.getByRole('button', { name: 'Replay all' }).click();
    const dialog = list.getByRole('dialog');
    await dialog.getByText('No other subscription of Resolver receives the copies.').waitFor();
    await dialog.getByRole('button', { name: 'Replay 1' }).click();
    await list.locator('[data-replay-state="done"]').waitFor();
    assert.match((await list.locator('[data-replay-state="done"]').textContent()) ?? '', /1 replayed/);
    await list.getByText('No dead letters.').waitFor();

    const recorded = await eventually('the recorded row', async () => {
      const r = await stack.store.getStatusRow(ep, eventId, sessionId);
      return r?.status === 'Completed' ? r : undefined;
    });
    assert.equal(recorded.lastMessageId, messageId, 'the replayed message kept its MessageId');
    assert.deepEqual((await stack.store.listHistory(eventId)).items.map((h) => h.messageId), [messageId]);
    assert.equal((await peekDeadLetters(stack.serviceBus.client, Topic.Resolver, Topic.Resolver)).items.length, 0, 'the dead-letter queue is empty');
    await list.close();
  });

  test('a reason filter that scanned 1,000 dead letters without a match says so, and scanning on finds the match', async () => {
    const topic = 'shippingendpoint';
    const reason = `Rare${randomUUID().slice(0, 8)}`;
    // One read of a filtered page looks at 1,000 dead letters at most: the match comes after 1,000 others.
    await deadLetterOnDeferredProcessor(topic, Array.from({ length: 1000 }, () => 'Filler'));
    const [match] = await deadLetterOnDeferredProcessor(topic, [reason]);

    const page = await open(`/topology/subscriptions/${topic}/${Subscription.DeferredProcessor}?reason=${reason}`);
    const outcome = page.locator('[data-scan-more]').or(page.getByText(/^No (more )?dead letters/));
    await outcome.first().waitFor();
    assert.match((await outcome.first().textContent()) ?? '', new RegExp(`Scanned \\d+ dead letters, found no matches with reason ${reason} yet`));
    assert.ok(await page.getByRole('button', { name: 'Next' }).isEnabled(), 'Next goes on scanning');
    assert.ok(await page.getByRole('button', { name: `Replay all with reason ${reason}` }).isEnabled(), 'Replay all does not depend on this page');
    await page.getByRole('button', { name: 'Continue scanning' }).click();
    await page.locator(`[data-dead-letter="${match}"]`).waitFor();
    assert.equal(await page.locator('[data-scan-more]').count(), 0, 'the queue ends after the match');
    assert.ok(await page.getByRole('button', { name: 'Next' }).isDisabled());
    await page.close();
  });

  test('an uncertain dead letter is shown with its evidence, not sent by a replay, and removed on the operator decision', async () => {
    const ep = 'crmendpoint';
    const reason = `Uncertain${randomUUID().slice(0, 8)}`;
    const ids = [randomUUID(), randomUUID()];
    const seeds = ids.map((messageId) => ({ message: { messageId, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: ep, [Prop.MessageType]: MessageType.EventRequest } }, reason }));
    await deadLetterOnMain(stack.serviceBus.client, ep, seeds, 'handler failed');
    // What a replay killed during its send leaves: the claim in `sending` for the first dead letter.
    const [first] = (await peekDeadLetters(stack.serviceBus.client, ep, ep, { reason })).items.filter((d) => d.messageId === ids[0]);
    assert.ok(first);
    const died = randomUUID();
    await new ReplayJournal(stack.store.database).claim({ topic: ep, subscription: ep, sequenceNumber: first.sequenceNumber, messageId: ids[0]! }, { operationId: died, auditor: 'someone' });

    const page = await open(`/topology/subscriptions/${ep}/${ep}`);
    await page.getByLabel('Filter by reason').fill(reason);
    await page.getByRole('button', { name: 'Filter' }).click();
    const uncertain = page.locator(`[data-dead-letter="${ids[0]}"] [data-replay-verdict="uncertain"]`);
    await uncertain.waitFor();
    assert.match((await uncertain.textContent()) ?? '', new RegExp(`may already have been delivered.*${died}.*someone`));

    await page.getByRole('button', { name: /Replay all/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.locator('[data-preview-journal]').waitFor();
    assert.match((await dialog.locator('[data-preview-journal]').textContent()) ?? '', /1 will be sent\. 0 already sent.*1 uncertain/);
    await dialog.getByRole('button', { name: 'Replay 1' }).click();
    await page.locator('[data-replay-state="done"]').waitFor();
    assert.match((await page.locator('[data-replay-state="done"]').textContent()) ?? '', /1 replayed.*1 uncertain/);
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await page.locator(`[data-dead-letter="${ids[1]}"]`).waitFor({ state: 'detached' });
    assert.deepEqual((await peekDeadLetters(stack.serviceBus.client, ep, ep, { reason })).items.map((d) => d.messageId), [ids[0]], 'the uncertain one was not sent');

    // A replay of only the uncertain one has nothing to send: the dialog says so, its button is disabled, not "Working…".
    await page.getByRole('button', { name: /Replay all/ }).click();
    await dialog.locator('[data-preview-journal]').waitFor();
    assert.equal(await dialog.getByRole('button', { name: 'Working…' }).count(), 0, 'nothing is working');
    assert.match((await dialog.locator('[data-nothing-to-send]').textContent()) ?? '', /Nothing to send: the one dead letter is uncertain; decide on it/);
    assert.ok(await dialog.getByRole('button', { name: 'Replay 0' }).isDisabled());
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });

    await uncertain.getByRole('button', { name: 'Remove as delivered…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove without sending' }).click();
    await page.locator('[data-replay-state="done"]').waitFor();
    assert.match((await page.locator('[data-replay-state="done"]').textContent()) ?? '', /1 decided: removed as delivered/);
    await page.getByText(`No dead letters with reason ${reason}.`).waitFor();
    const audits = await stack.store.listAudits(TOPOLOGY_AUDIT_EVENT, { pageSize: 100 });
    assert.ok(audits.items.some((a) => a.type === 'ReplayUncertainDecision' && (a.comment ?? "").includes('markDelivered')), 'the decision is audited');
    await page.close();
  });

  test('a confirmed replay or decision that fails says why inside its dialog, which stays open', async () => {
    const topic = 'erpendpoint';
    const sub = Subscription.DeferredProcessor;
    const reason = `Refused${randomUUID().slice(0, 8)}`;
    const [uncertainId, plainId] = await deadLetterOnDeferredProcessor(topic, [reason, reason]);
    const [first] = (await peekDeadLetters(stack.serviceBus.client, topic, sub, { reason })).items.filter((d) => d.messageId === uncertainId);
    assert.ok(first);
    await new ReplayJournal(stack.store.database).claim({ topic, subscription: sub, sequenceNumber: first.sequenceNumber, messageId: uncertainId! }, { operationId: randomUUID(), auditor: 'someone' });

    const page = await open(`/topology/subscriptions/${topic}/${sub}?reason=${reason}`);
    await page.locator(`[data-dead-letter="${plainId}"]`).waitFor();
    // The replay request fails as a store outage answers it: 503 with the server's error shape.
    const isReplay = (url: URL) => url.pathname.endsWith('/replay');
    await page.route(isReplay, (route) => route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'unavailable', detail: 'injected outage' }) }));
    const dialog = page.getByRole('dialog');
    const inDialog = async (what: string) => {
      await page.getByRole('alert').filter({ hasText: 'injected outage' }).first().waitFor();
      assert.equal(await dialog.getByRole('alert').filter({ hasText: 'injected outage' }).count(), 1, `${what}: the error is in the open dialog`);
    };

    await page.getByRole('button', { name: /Replay all/ }).click();
    await dialog.getByRole('button', { name: 'Replay 1' }).click();
    await inDialog('replay');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('alert').filter({ hasText: 'injected outage' }).count(), 0, 'the error went with its dialog');

    await page.locator(`[data-dead-letter="${uncertainId}"]`).getByRole('button', { name: 'Remove as delivered…' }).click();
    await dialog.getByRole('button', { name: 'Remove without sending' }).click();
    await inDialog('decision');
    // The store answers again: the same dialog's button goes through.
    await page.unroute(isReplay);
    await dialog.getByRole('button', { name: 'Remove without sending' }).click();
    await page.locator('[data-replay-state="done"]').waitFor();
    assert.match((await page.locator('[data-replay-state="done"]').textContent()) ?? '', /1 decided: removed as delivered/);
    await page.close();
  });

  test('a replay whose progress record is not found is let go of, with an error, and the buttons work again', async () => {
    const topic = 'storefrontendpoint';
    const sub = Subscription.DeferredProcessor;
    const reason = `Lost${randomUUID().slice(0, 8)}`;
    const [id] = await deadLetterOnDeferredProcessor(topic, [reason]);
    const page = await open(`/topology/subscriptions/${topic}/${sub}?reason=${reason}`);
    await page.locator(`[data-dead-letter="${id}"]`).waitFor();
    // An operation id the server has no record of (what an answer before the record was written could give).
    const isReplay = (url: URL) => url.pathname.endsWith('/replay');
    await page.route(isReplay, (route) => route.fulfill({ status: 202, contentType: 'application/json', body: JSON.stringify({ operationId: randomUUID() }) }));
    await page.getByRole('button', { name: /Replay all/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Replay 1' }).click();
    const error = page.getByRole('alert').filter({ hasText: /is not known|has no progress record/ });
    await error.waitFor();
    assert.match((await error.textContent()) ?? '', /has no progress record/);
    await page.unroute(isReplay);
    assert.ok(await page.getByRole('button', { name: /Replay all/ }).isEnabled(), 'no replay is waited for');
    await page.getByRole('button', { name: /Replay all/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Replay 1' }).click();
    await page.locator('[data-replay-state="done"]').waitFor();
    await page.close();
  });

  test('purge states how many dead letters it deletes, that it ignores the filter, and asks for topic/subscription', async () => {
    const topic = 'billingendpoint';
    const sub = Subscription.DeferredProcessor;
    const reason = `Purged${randomUUID().slice(0, 8)}`;
    await deadLetterOnDeferredProcessor(topic, [reason, reason]);
    const page = await open(`/topology/subscriptions/${topic}/${sub}?reason=${reason}`);
    await page.locator('[data-dead-letter]').nth(1).waitFor();
    await page.getByRole('button', { name: 'Purge…' }).click();
    const dialog = page.getByRole('dialog');
    const count = dialog.locator('[data-purge-count]');
    await count.filter({ hasText: /as of/ }).waitFor();
    assert.match((await count.textContent()) ?? '', /^2 dead letters as of /);
    assert.match((await dialog.textContent()) ?? '', new RegExp(`not only those with reason ${reason}: a purge ignores the filter`));
    const typed = dialog.getByRole('textbox');
    await typed.fill(sub);
    assert.ok(await dialog.getByRole('button', { name: 'Purge' }).isDisabled(), 'the subscription name alone (on every topic) does not confirm');
    await typed.fill(`${topic}/${sub}`);
    await dialog.getByRole('button', { name: 'Purge' }).click();
    await page.getByText('Purged 2 dead letters.').waitFor();
    assert.deepEqual((await peekDeadLetters(stack.serviceBus.client, topic, sub)).items, []);
    await page.close();
  });

  test('a purge that fails says why exactly once, inside its dialog, which stays open for a retry', async () => {
    const topic = 'billingendpoint';
    const sub = Subscription.DeferredProcessor;
    const reason = `PurgeRefused${randomUUID().slice(0, 8)}`;
    await deadLetterOnDeferredProcessor(topic, [reason]);
    const page = await open(`/topology/subscriptions/${topic}/${sub}?reason=${reason}`);
    await page.locator('[data-dead-letter]').first().waitFor();
    // The first purge request fails as a store outage answers it: 503 with the server's error shape.
    let attempts = 0;
    await page.route(
      (u) => u.pathname.endsWith('/actions'),
      (route) =>
        ++attempts === 1
          ? route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'unavailable', detail: 'injected outage' }) })
          : route.continue(),
    );
    await page.getByRole('button', { name: 'Purge…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('textbox').fill(`${topic}/${sub}`);
    await dialog.getByRole('button', { name: 'Purge' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'injected outage' }).waitFor();
    // Anywhere on the page, the inert part behind the modal included, as an alert or as any other text.
    assert.equal(await page.getByText('injected outage').count(), 1, 'the error is shown once');
    assert.equal(await page.locator('main [role=alert]').count(), 1, 'and no other error box');
    // Pressed again in the same dialog, the purge goes through.
    await dialog.getByRole('button', { name: 'Purge' }).click();
    await page.getByText(/^Purged \d+ dead letters\.$/).waitFor();
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.locator('[role=alert]').filter({ hasText: 'injected outage' }).count(), 0, 'the error went with its dialog');
    assert.equal(attempts, 2);
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    await page.close();
  });

  test('the reconcile and health pages render their data', async () => {
    const reconcile = await open('/operations/reconcile');
    await reconcile.getByText('No stale Pending rows.').waitFor();
    await reconcile.close();
    const health = await open('/admin/health');
    await health.locator('tr[data-endpoint="billingendpoint"] [data-heartbeat-status="Unknown"]').waitFor();
    await health.getByRole('button', { name: 'Send now' }).click();
    await health.getByText(/Sent \d+ probes\./).waitFor();
    await health.locator('tr[data-endpoint="billingendpoint"] [data-heartbeat-status="Pending"]').waitFor();
    await health.close();
    assert.deepEqual(pageErrors, []);
  });
});
