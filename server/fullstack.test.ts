// The console's commands through the whole platform: a real SDK subscriber host and deferred processor on the
// emulator, the Resolver worker writing the store, and the console's route handlers acting on what the Resolver
// recorded. A failed event blocks its session and parks its siblings; a resubmit (or a skip) from the API
// releases it, and the Resolver records the event and then its parked siblings as settled.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { DeferredProcessor, HandlerRegistry, Publisher, sessionKeysFromCatalog, SubscriberHost } from '@nimbus/sdk';
import type { StatusRowSummary } from '../lib/store/index.ts';
import { startResolver, type ResolverHandle } from '../resolver-worker/index.ts';
import { startConsoleTestStack, type ConsoleTestStack } from './testing/stack.ts';
// Types only: the route modules are imported after the log level is set (server/log.ts reads it on load).
import type * as ResubmitRoute from '../app/api/event/resubmit/[endpointId]/[eventId]/route.ts';
import type * as SkipRoute from '../app/api/event/skip/[endpointId]/[eventId]/route.ts';
import { endProcessAfterResults } from '../packages/sdk/e2e/harness.ts';

// What the Service Bus client leaves pending once the Resolver and the hosts are closed (a receiver still opening
// keeps a 60 s timer) held this process up for 60 s after its last result; harness.ts explains the exit.
endProcessAfterResults();

process.env.NIMBUS_LOG_LEVEL = 'silent';

type Order = { orderId: string; n: number };

let stack: ConsoleTestStack;
let resolver: ResolverHandle;
let host: SubscriberHost;
let deferred: DeferredProcessor;
let publisher: Publisher;
let closeContext: () => Promise<void>;
let resubmitRoute: typeof ResubmitRoute;
let skipRoute: typeof SkipRoute;
/** Orders whose billing fails until the test "fixes" them. */
const broken = new Set<string>();

before(async () => {
  stack = await startConsoleTestStack();
  Object.assign(process.env, stack.env);
  resolver = startResolver({ client: stack.serviceBus.client, store: stack.store, sessionIdleTimeoutMs: 200, log: pino({ level: 'silent' }) });
  const handlers = new HandlerRegistry()
    .on<Order>('OrderPlaced', (o) => {
      if (broken.has(o.orderId) && o.n === 1) throw new Error(`credit check unavailable for ${o.orderId}`);
    })
    .on<Order>('OrderCancelled', () => undefined);
  host = new SubscriberHost({ client: stack.serviceBus.client, endpointId: 'billingendpoint', handlers, maxConcurrentSessions: 4, sessionIdleTimeoutMs: 300, backoff: { initialMs: 50, maxMs: 500 }, deferredProcessor: false });
  await host.start();
  deferred = new DeferredProcessor({ client: stack.serviceBus.client, endpointId: 'billingendpoint', drainWaitMs: 300, triggerWaitMs: 1000, backoff: { initialMs: 50, maxMs: 500 } });
  deferred.start();
  publisher = new Publisher({ client: stack.serviceBus.client, endpointId: 'storefrontendpoint', sessionKeys: sessionKeysFromCatalog(stack.catalog) });
  resubmitRoute = await import('../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
  skipRoute = await import('../app/api/event/skip/[endpointId]/[eventId]/route.ts');
  ({ closeContext } = await import('./context.ts'));
});

after(async () => {
  await publisher?.close().catch(() => undefined);
  await deferred?.stop().catch(() => undefined);
  await host?.stop().catch(() => undefined);
  await resolver?.stop().catch(() => undefined);
  await closeContext?.();
  await stack?.close();
});

async function sessionRows(sessionId: string): Promise<StatusRowSummary[]> {
  const page = await stack.store.listEvents({ endpointId: 'billingendpoint', sessionId, pageSize: 50 });
  return page.items;
}

async function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Publishes three orders' events on one session and waits until #1 failed and #2, #3 are parked behind it. */
async function blockedSession(orderId: string): Promise<{ failed: StatusRowSummary; parked: StatusRowSummary[] }> {
  broken.add(orderId);
  await publisher.publish('OrderPlaced', { orderId, n: 1 });
  await publisher.publish('OrderPlaced', { orderId, n: 2 });
  await publisher.publish('OrderCancelled', { orderId, n: 3 });
  return waitFor(async () => {
    const rows = await sessionRows(orderId);
    const failed = rows.find((r) => r.status === 'Failed');
    const parked = rows.filter((r) => r.status === 'Deferred');
    return failed && parked.length === 2 ? { failed, parked } : undefined;
  }, `a failed event and two parked siblings in session ${orderId}`);
}

const post = () => new Request('http://127.0.0.1/x', { method: 'POST' });
const params = (eventId: string) => ({ params: Promise.resolve({ endpointId: 'billingendpoint', eventId }) });

describe('console commands on the running platform', () => {
  test('resubmit: the failed event turns Completed, then its parked siblings', async () => {
    const { failed } = await blockedSession('ORD-LOOP-1');
    broken.delete('ORD-LOOP-1'); // the operator fixed the cause
    const res = await resubmitRoute.POST(post(), params(failed.eventId));
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal(((await res.json()) as { outcome: string }).outcome, 'sent');
    const rows = await waitFor(async () => {
      const all = await sessionRows('ORD-LOOP-1');
      return all.length === 3 && all.every((r) => r.status === 'Completed') ? all : undefined;
    }, 'all three events Completed');
    assert.equal(rows.length, 3);
    const details = await stack.store.getEvent('billingendpoint', failed.eventId);
    const types = details!.history.items.map((h) => `${h.messageType}:${h.from ?? ''}`);
    assert.ok(types.includes('ResubmissionRequest:Manager'), types.join(', '));
    assert.equal(types.at(-1), 'ResolutionResponse:billingendpoint');
    // A late repeat of the click is refused: the event is Completed now.
    assert.equal((await resubmitRoute.POST(post(), params(failed.eventId))).status, 409);
  });

  test('skip: the failed event turns Skipped and its parked siblings are processed', async () => {
    const { failed } = await blockedSession('ORD-LOOP-2');
    const res = await skipRoute.POST(post(), params(failed.eventId));
    assert.equal(res.status, 200, await res.clone().text());
    const rows = await waitFor(async () => {
      const all = await sessionRows('ORD-LOOP-2');
      const skipped = all.filter((r) => r.status === 'Skipped');
      const completed = all.filter((r) => r.status === 'Completed');
      return skipped.length === 1 && completed.length === 2 ? all : undefined;
    }, 'one Skipped and two Completed');
    assert.equal(rows.find((r) => r.status === 'Skipped')!.eventId, failed.eventId);
  });
});
