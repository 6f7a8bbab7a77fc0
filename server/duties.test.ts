// Background duties with two console replicas in one process, each with its own Cosmos client on one embedded
// Cosmos server (and one emulator): one reconcile at a time, one runner per replay operation, and a replica that
// dies (stops renewing) loses its lease within the TTL. The heartbeat's one-sender-per-interval race is in
// server/heartbeat/heartbeat.test.ts (two schedulers ticking together).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createStore, LeaseStore, type MessageStore } from '../lib/store/index.ts';
import { HttpError } from './http.ts';
import { RECONCILE_LEASE, withReconcileLease } from './reconcile/routes.ts';
import { replayDeadLetters, replayLeaseName } from './subscriptions/replay.ts';
import { ReplayJournal } from './subscriptions/replayJournal.ts';
import { startConsoleTestStack, type ConsoleTestStack } from './testing/stack.ts';
import { waitFor } from '../lib/testing/waitFor.ts';

let stack: ConsoleTestStack;
/** Replica B's own store (own client), beside the stack's store used as replica A's. */
let storeB: MessageStore;
let a: LeaseStore;
let b: LeaseStore;

before(async () => {
  stack = await startConsoleTestStack('duties');
  storeB = await createStore({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'duties' });
  a = new LeaseStore(stack.store.database);
  b = new LeaseStore(storeB.database);
});
after(async () => {
  await storeB?.close();
  await stack?.close();
});

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
};

test('one reconcile at a time across replicas: the second gets 409 while the first runs, and runs once it is done', async () => {
  const held = gate();
  let runningA = false;
  const first = withReconcileLease(a, 'replica-a', async () => {
    runningA = true;
    await held.opened;
    return 'a';
  });
  await waitFor('replica A reconciling', async () => runningA);
  await assert.rejects(
    withReconcileLease(b, 'replica-b', async () => 'b'),
    (err: unknown) => err instanceof HttpError && err.status === 409 && /another reconcile is running/.test(err.message + JSON.stringify(err)),
  );
  held.open();
  assert.equal(await first, 'a');
  assert.equal(await withReconcileLease(b, 'replica-b', async () => 'b'), 'b', 'released at the end: B may reconcile now');
});

test('a replica that dies while reconciling loses the lease within the TTL; the other takes over', async () => {
  const ttlMs = 2000;
  // Replica A took the lease and died at once: nothing renews it any more.
  assert.ok(await a.acquire(RECONCILE_LEASE, 'replica-a-dead', ttlMs));
  const diedAt = Date.now();
  await assert.rejects(withReconcileLease(b, 'replica-b', async () => 'b', ttlMs), (e: unknown) => e instanceof HttpError && e.status === 409);
  let took: string | undefined;
  await waitFor('replica B reconciling', async () => {
    took = await withReconcileLease(b, 'replica-b', async () => 'b', ttlMs).catch(() => undefined);
    return took !== undefined;
  });
  const waited = Date.now() - diedAt;
  assert.equal(took, 'b');
  assert.ok(waited >= ttlMs - 100, `taken over after ${waited} ms, before the lease expired`);
  assert.ok(waited < ttlMs + 10_000, `taken over after ${waited} ms: not bounded by the TTL`);
});

test('a live holder keeps its lease past the TTL by renewing it (the other replica stays out)', async () => {
  const ttlMs = 1500;
  const held = gate();
  let running = false;
  const first = withReconcileLease(a, 'replica-a', async () => {
    running = true;
    await held.opened;
  }, ttlMs);
  await waitFor('A holding', async () => running);
  await new Promise((r) => setTimeout(r, ttlMs * 2));
  await assert.rejects(withReconcileLease(b, 'replica-b', async () => 'b', ttlMs), (e: unknown) => e instanceof HttpError && e.status === 409);
  held.open();
  await first;
});

test('one runner per replay operation: the same operation started on a second replica is refused while it runs', async () => {
  const operationId = randomUUID();
  const topic = stack.catalog.endpoints[0]!.id;
  const deps = (store: MessageStore, leases: LeaseStore, owner: string) => ({
    client: stack.serviceBus.client,
    store,
    journal: new ReplayJournal(store.database),
    // An empty dead-letter queue: the pass waits this long for a first dead letter, long enough to race it.
    receiveWaitMs: 3000,
    lease: { leases, owner },
  });
  const args = { topic, subscription: topic, selection: { all: true }, auditor: 'tester', operationId };
  const first = replayDeadLetters(deps(stack.store, a, 'replica-a'), args);
  await waitFor('replica A running the replay', async () => (await a.holder(replayLeaseName(operationId)))?.owner === 'replica-a');
  await assert.rejects(replayDeadLetters(deps(storeB, b, 'replica-b'), args), (e: unknown) => e instanceof HttpError && e.status === 409);
  const op = await first;
  assert.equal(op.state, 'done');
  assert.equal(await a.holder(replayLeaseName(operationId)), undefined, 'the lease is released when the replay ends');
});
