// A paused job stays in reach however many job documents came after it. Every confirmation dialog leaves a job
// document (prepared, then discarded), so a job paused on Monday may be older than the newest 200 by Friday: the
// runner used to scan only the newest 200 (a resume was recorded and never carried out) and the Jobs drawer only
// the newest 100 (the job, and its Resume, were gone from it), and a confirmation's "previous job" was looked for
// among the newest 100 job documents too. On the embedded stack (real Service Bus emulator, embedded Cosmos, the
// route handlers as Next calls them, the console's own runner).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { routeRequest as req, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { JobStore } from './jobs.ts';
import type { OperationSummary } from './routes.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'billingendpoint';
let stack: ConsoleTestStack;
let jobs: JobStore;

before(async () => {
  stack = await startRouteTestStack('unfinishedjobs');
  jobs = new JobStore(new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! }));
});
after(async () => {
  jobs?.docs.close();
  await stack?.close();
});

/** A Failed event of EP (its request and error, as the Resolver records them), in session S-1. */
async function seedFailed(eventId: string): Promise<void> {
  const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: 'S-1', eventTypeId: 'OrderPlaced', payload: { i: 1 } });
  const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: 'S-1', parentMessageId: request.messageId, errorType: 'E', errorText: 'boom' });
  for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
}

test('a paused job older than the newest 200 job documents is listed and resumes, and is found as the previous job', { timeout: 300_000 }, async () => {
  await seedFailed('p-1');
  const rows = [{ endpointId: EP, eventId: 'p-1', sessionId: 'S-1' }];
  // The job as a runner leaves it paused (no runner exists in this process yet: the first route call starts it).
  const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP }, rows, startedBy: 'tester', ratePerSecond: 0 });
  await jobs.setControl(job.operationId, 'pause', 'tester');
  await jobs.save({ ...job, state: 'paused' }, (await jobs.read(job.operationId))!.etag);
  // 200 confirmations opened after it (each a prepared job document, written later than the paused job's).
  for (let i = 0; i < 200; i++) await jobs.create({ kind: 'skip', selection: { endpointId: EP }, rows, startedBy: 'other', ratePerSecond: 0, hold: true });

  const ops = await import('../../app/api/operations/route.ts');
  const resume = await import('../../app/api/operations/[operationId]/resume/route.ts');
  const list = async () => ((await (await ops.GET(req('GET', '/api/operations'))).json()) as { operations: OperationSummary[] }).operations;
  const listed = (await list()).find((o) => o.operationId === job.operationId);
  assert.equal(listed?.state, 'paused', 'the drawer lists the paused job, with its Resume');
  assert.equal(listed.requested, 'pause');

  const resumed = await resume.POST(req('POST', `/api/operations/${job.operationId}/resume`), { params: Promise.resolve({ operationId: job.operationId }) });
  assert.equal(resumed.status, 200, await resumed.clone().text());
  await waitFor('the resumed job completed', async () => (await jobs.get(job.operationId))?.state === 'completed');
  const done = (await jobs.get(job.operationId))!;
  assert.equal(done.done, 1);
  assert.equal((await list()).find((o) => o.operationId === job.operationId)?.state, 'completed');

  // 100 confirmations later, the next confirmation on the same filter still names this job as the previous one.
  for (let i = 0; i < 100; i++) await jobs.create({ kind: 'skip', selection: { endpointId: EP }, rows, startedBy: 'other', ratePerSecond: 0, hold: true });
  await seedFailed('p-2');
  const prepared = await ops.POST(req('POST', '/api/operations', { kind: 'resubmit', selection: { endpointId: EP }, hold: true }));
  assert.equal(prepared.status, 202, await prepared.clone().text());
  assert.equal(((await prepared.json()) as { previous: { operationId: string } | null }).previous?.operationId, job.operationId);
});
