// The SDK test harness promises "the status the Resolver would record": here both watch the same flows on one
// emulator — the real Resolver writing rows to the embedded Cosmos store, and the harness projecting them from its
// own subscription on the Resolver topic — and every event's status must agree, while sessions are blocked and
// after they are settled.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { HandlerRegistry, PermanentFailureError, RetryPolicies } from '@nimbus/sdk';
import type { ResolutionStatus } from '@nimbus/sdk/contract';
import { createTestHarness, type TestHarness } from '@nimbus/sdk/testing';
import { startEmulator } from '../emulator/index.ts';
import { createStore, startEmbeddedCosmos, type EmbeddedCosmos, type MessageStore } from '../lib/store/index.ts';
import { startResolver } from './index.ts';
import { eventually } from './testHarness.ts';

const catalog = {
  endpoints: [
    { id: 'shop', produces: ['OrderPlaced', 'OrderNoted'] },
    { id: 'billing', consumes: ['OrderPlaced', 'OrderNoted'] },
  ],
  eventTypes: [
    { id: 'OrderPlaced', sessionKey: 'orderId' },
    { id: 'OrderNoted', sessionKey: 'orderId' },
  ],
};

class Flaky extends Error {}

let harness: TestHarness;
let cosmos: EmbeddedCosmos;
let store: MessageStore;
let resolver: ReturnType<typeof startResolver>;
before(async () => {
  harness = await createTestHarness({ catalog, emulator: () => startEmulator({ port: 0 }) });
  cosmos = await startEmbeddedCosmos({ port: 0 });
  store = await createStore({ endpoint: cosmos.endpoint, key: cosmos.key, database: 'parity' });
  resolver = startResolver({
    client: harness.client,
    store,
    concurrency: 4,
    sessionIdleTimeoutMs: 300,
    budget: { baseDelayMs: 20, maxDelayMs: 200 },
    log: pino({ level: 'silent' }),
  });
});
after(async () => {
  await resolver.stop();
  await store.close();
  await cosmos.close();
  await harness.close();
});

type Statuses = Record<string, string>;
const label = (status: string, sub?: string | null) => (sub ? `${status}/${sub}` : status);

/** Both views of the same events once the Resolver's rows match `expected` (keyed by order id). */
async function bothViews(published: Record<string, string>, expected: Statuses): Promise<{ resolver: Statuses; harness: Statuses }> {
  const fromHarness: Statuses = {};
  for (const [order, messageId] of Object.entries(published)) {
    await harness.outcome(messageId, { status: expected[order]!.split('/')[0] as ResolutionStatus });
    // A sub-status (Pending/Handoff) comes with a later message than the plain status: wait for the label itself.
    const row = await eventually(() => {
      const r = harness.outcomes.book.find(messageId, 'billing')[0];
      return r && label(r.status, r.subStatus) === expected[order] ? r : undefined;
    }, `the harness outcome of ${order}`, 20_000).catch(() => harness.outcomes.book.find(messageId, 'billing')[0]!);
    fromHarness[order] = label(row.status, row.subStatus);
  }
  const rows = Object.entries(published).map(([order, messageId]) => [order, harness.outcomes.book.find(messageId, 'billing')[0]!] as const);
  const fromResolver = await eventually(async () => {
    const out: Statuses = {};
    for (const [order, projected] of rows) {
      const row = await store.getStatusRow('billing', projected.eventId, projected.sessionId);
      if (!row) return undefined;
      out[order] = label(row.status, row.subStatus);
    }
    return Object.entries(expected).every(([k, v]) => out[k] === v) ? out : undefined;
  }, 'the Resolver rows', 30_000).catch(() => undefined);
  return { resolver: fromResolver ?? {}, harness: fromHarness };
}

test('the harness projects the very statuses the Resolver records: blocked, deferred, handed off, settled', async () => {
  const calls = new Map<string, number>();
  await harness.host(
    'billing',
    new HandlerRegistry().on('OrderPlaced', (o: { orderId: string; kind: string }, ctx) => {
      const n = (calls.get(o.orderId + o.kind) ?? 0) + 1;
      calls.set(o.orderId + o.kind, n);
      if (o.kind === 'poison') throw new PermanentFailureError('cannot ever be imported');
      if (o.kind === 'broken' && n === 1) throw new Error('rejected by the partner');
      if (o.kind === 'flaky' && n === 1) throw new Flaky('503');
      if (o.kind === 'handoff') ctx.markPendingHandoff('import job', 'job-1', 60_000);
    }),
    { retryPolicies: new RetryPolicies().addExceptionRule(Flaky, { maxRetries: 2, strategy: 'Fixed', baseDelayMs: 600_000 }) },
  );
  const pub = async (orderId: string, kind: string, type = 'OrderPlaced') =>
    (await harness.publish('shop', type, { orderId, kind })).messageId;
  const published: Record<string, string> = {};
  published.ok = await pub('ok', 'ok');
  published.poison = await pub('poison', 'poison');
  published.broken = await pub('broken', 'broken');
  // Same session as 'broken': parked behind it.
  published.behind = (await harness.publish('shop', 'OrderPlaced', { orderId: 'broken', kind: 'behind' })).messageId;
  published.flaky = await pub('flaky', 'flaky');
  published.handoff = await pub('handoff', 'handoff');
  published.noted = await pub('noted', 'noted', 'OrderNoted');

  const blocked: Statuses = {
    ok: 'Completed',
    poison: 'DeadLettered',
    broken: 'Failed',
    behind: 'Deferred',
    flaky: 'Failed',
    handoff: 'Pending/Handoff',
    noted: 'Unsupported',
  };
  const first = await bothViews(published, blocked);
  assert.deepEqual(first.harness, blocked);
  assert.deepEqual(first.resolver, first.harness, 'while blocked');

  await harness.advanceRetries({ expect: 1 });
  await harness.completeHandoff(published.handoff);
  const settled: Statuses = { ...blocked, flaky: 'Completed', handoff: 'Completed' };
  const second = await bothViews(published, settled);
  assert.deepEqual(second.harness, settled);
  assert.deepEqual(second.resolver, second.harness, 'after settling');
});
