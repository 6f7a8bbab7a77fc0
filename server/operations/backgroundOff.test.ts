// NIMBUS_BACKGROUND=off keeps a console replica's bulk-job runner off: its requests (the Jobs drawer's list, a new
// job) store and read jobs, and a replica with its duties on runs them. Before, the drawer's first GET started the
// runner on the replica anyway. On the embedded stack (real Service Bus emulator, embedded Cosmos, the route
// handlers as Next calls them in this process - the replica with its duties off - and a runner of this test as
// the replica with them on).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { LeaseStore } from '../../lib/store/index.ts';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { Manager } from '../manager/manager.ts';
import { routeRequest as req, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { JobStore, type Job } from './jobs.ts';
import { OperationsRunner } from './runner.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
process.env.NIMBUS_BACKGROUND = 'off';
const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let jobs: JobStore;

before(async () => {
  stack = await startRouteTestStack('backgroundoff');
  jobs = new JobStore(new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! }));
});
after(async () => {
  jobs?.docs.close();
  await stack?.close();
});

test('a replica with background duties off runs no job; one with them on does', { timeout: 300_000 }, async () => {
  for (const eventId of ['b-1', 'b-2']) {
    const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: 'S-b', eventTypeId: 'OrderPlaced', payload: {} });
    const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: 'S-b', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
    for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  }
  // A job waiting for a runner before this replica serves anything: the drawer's list would have started one here.
  const waiting = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP, eventIds: ['b-1'] }, rows: [{ endpointId: EP, eventId: 'b-1', sessionId: 'S-b' }], startedBy: 'tester', ratePerSecond: 0 });
  const ops = await import('../../app/api/operations/route.ts');
  const listed = (await (await ops.GET(req('GET', '/api/operations'))).json()) as { operations: Array<{ operationId: string; state: string }> };
  assert.equal(listed.operations.find((o) => o.operationId === waiting.operationId)?.state, 'queued', 'listed, not run');
  // A job created here (which wakes a runner at once where one runs).
  const created = await ops.POST(req('POST', '/api/operations', { kind: 'resubmit', selection: { endpointId: EP, eventIds: ['b-2'] } }));
  assert.equal(created.status, 202, await created.clone().text());
  const { operationId } = (await created.json()) as { operationId: string };

  // The replica with its duties on: it runs both, and it alone finishes them (a runner finishes the job it holds).
  const finishedHere: Job[] = [];
  const manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
  const runner = new OperationsRunner({ store: stack.store, jobs, leases: new LeaseStore(stack.store.database), manager, scanEveryMs: 500, onFinished: (j) => { finishedHere.push(j); } }).start();
  try {
    for (const id of [waiting.operationId, operationId]) await waitFor(`job ${id} completed`, async () => (await jobs.get(id))?.state === 'completed');
    // onFinished runs after the completed job is saved: wait for it rather than read it at once.
    await waitFor('both finished by the duty replica', async () => finishedHere.length === 2);
    assert.deepEqual(finishedHere.map((j) => j.operationId).sort(), [waiting.operationId, operationId].sort());
  } finally {
    await runner.stop();
    await manager.close();
  }
});
