// A bulk job the runner stopped because its starter's granted role was revoked (authority.ts) carries the reason
// (`stoppedReason`, "stopped: <user> no longer holds <role> on <endpoints>"), and the Jobs drawer shows it: both
// answers that feed the drawer and a job's view carry it - GET /api/operations (the drawer's list) and GET
// /api/operations/{id} - and neither invents one for a job that has none. Before, the list left it out, so the
// drawer showed such a job as "cancelled" alone, as if an operator had cancelled it. On the embedded stack (real
// Cosmos), through the route handlers as Next calls them; the job written as the runner leaves it (authority.test.ts
// holds the runner's side).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { routeRequest as req, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { lapseReason } from './authority.ts';
import { JobStore, type Job, type JobView } from './jobs.ts';
import type { OperationSummary } from './routes.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let jobs: JobStore;

before(async () => {
  stack = await startRouteTestStack('stoppedreason');
  jobs = new JobStore(new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! }));
});
after(async () => {
  jobs?.docs.close();
  await stack?.close();
});

/** A job that ended as `end` says, created held first so that no runner picks it up before it is written so. */
async function endedJob(end: Partial<Job>): Promise<string> {
  const held = await jobs.create({
    kind: 'resubmit',
    selection: { endpointId: EP, eventIds: ['evt-1'] },
    rows: [{ endpointId: EP, eventId: 'evt-1' }],
    startedBy: 'Pat Smith',
    startedById: 'user:oid-pat',
    ratePerSecond: 0,
    hold: true,
  });
  const { job, etag } = (await jobs.read(held.operationId))!;
  const at = new Date().toISOString();
  assert.ok(await jobs.save({ ...job, confirmedAt: at, startedAt: at, finishedAt: at, ...end }, etag));
  return held.operationId;
}

test("GET /api/operations and /api/operations/{id} carry a stopped job's reason, and none for a job without one", { timeout: 120_000 }, async () => {
  const reason = lapseReason('Pat Smith', 'Operator', [EP]);
  const stopped = await endedJob({ state: 'cancelled', stoppedReason: reason });
  const cancelled = await endedJob({ state: 'cancelled' });
  const completed = await endedJob({ state: 'completed', done: 1, cursor: 1 });

  const ops = await import('../../app/api/operations/route.ts');
  const one = await import('../../app/api/operations/[operationId]/route.ts');
  const res = await ops.GET(req('GET', '/api/operations'));
  assert.equal(res.status, 200, await res.clone().text());
  const listed = ((await res.json()) as { operations: OperationSummary[] }).operations;
  const reasonOf = (id: string) => listed.find((o) => o.operationId === id)?.stoppedReason;
  assert.deepEqual([reasonOf(stopped), reasonOf(cancelled), reasonOf(completed)], [reason, null, null], "the list: the stopped job's reason; null for the others");

  const view = async (id: string) => {
    const r = await one.GET(req('GET', `/api/operations/${id}`), { params: Promise.resolve({ operationId: id }) });
    assert.equal(r.status, 200, await r.clone().text());
    return (await r.json()) as JobView;
  };
  assert.deepEqual([(await view(stopped)).state, (await view(stopped)).stoppedReason], ['cancelled', reason]);
  assert.equal((await view(cancelled)).stoppedReason, undefined, "an operator's cancel has no reason");
});
