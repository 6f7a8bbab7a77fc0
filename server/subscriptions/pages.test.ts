// Browser test of the operations pages: the built console (startConsole) on the embedded stack, driven in
// Debian's Chromium by playwright-core, as e2e/console.test.ts does. A Resolver dead letter is produced for real:
// the Resolver's store sits behind a fault proxy that answers 429 until the throttle budget is spent and the
// Resolver dead-letters with CosmosDbThrottled. After the fault stops, the operator replays it from the page:
// the row is recorded, the dead-letter queue is empty and the replayed message kept its MessageId.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import { launchTestChromium, type TestBrowser } from '../testing/chromium.ts';
import { pino } from 'pino';
import { encodeBody, MessageType, Prop, Topic } from '../../lib/contract/index.ts';
import { createStore, type MessageStore } from '../../lib/store/index.ts';
import { startFaultProxy, type FaultProxy } from '../../lib/store/testing/faultProxy.ts';
import { startResolver, type ResolverHandle } from '../../resolver-worker/index.ts';
import { ensureConsoleBuilt } from '../build.ts';
import { CONSOLE_DIR, startConsole, type RunningConsole } from '../console.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { peekDeadLetters } from './deadLetters.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;

let stack: ConsoleTestStack;
let proxy: FaultProxy;
let resolverStore: MessageStore;
let resolver: ResolverHandle;
let app: RunningConsole;
let browser: BrowserContext;
let chromiumInstance: TestBrowser | undefined;
const pageErrors: string[] = [];

async function open(path: string): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(`${path}: ${e.message}`));
  await page.goto(app.url + path);
  return page;
}

async function eventually<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const v = await probe();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`timed out waiting for ${what}`);
}

before(async () => {
  await ensureConsoleBuilt(DIR);
  stack = await startConsoleTestStack();
  proxy = await startFaultProxy(stack.cosmos.endpoint);
  resolverStore = await createStore({ endpoint: proxy.endpoint, key: stack.cosmos.key, database: 'nimbus' });
  resolver = startResolver({ client: stack.serviceBus.client, store: resolverStore, sessionIdleTimeoutMs: 200, budget: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 10 }, log: pino({ level: 'silent' }) });
  app = await startConsole({ port: 0, hostname: '127.0.0.1', env: stack.env, dir: DIR });
  chromiumInstance = await launchTestChromium();
  browser = chromiumInstance.context;
});

after(async () => {
  await chromiumInstance?.close();
  await app?.close();
  const { closeOpsServices } = await import('../heartbeat/services.ts');
  await closeOpsServices();
  await resolver?.stop().catch(() => undefined);
  await resolverStore?.close().catch(() => undefined);
  await proxy?.close();
  await stack?.close();
});

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
