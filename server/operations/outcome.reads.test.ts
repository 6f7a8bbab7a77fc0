// The bulk job follow-up (GET /api/operations/{id}/outcome) reads only what it checks, on the embedded stack (real
// Cosmos, the console's own context): the drawer asks again every few seconds, so a job frozen in several chunks
// must cost one chunk read, not one per chunk. Reads are counted by wrapping the real documents' read.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { CHUNK_ROWS } from './jobs.ts';
import { OUTCOME_CHECK_LIMIT, outcomeOf } from './outcome.ts';
import { getOperations, stopOperations } from './service.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
let stack: ConsoleTestStack;

before(async () => {
  stack = await startRouteTestStack('outcomereads');
});
after(async () => {
  await stopOperations();
  await stack?.close();
});

test('the outcome of a job frozen in more than one chunk reads only the first chunk', async () => {
  const { getContext } = await import('../context.ts');
  const ctx = await getContext(process.env);
  const { jobs } = getOperations(ctx);
  assert.equal(OUTCOME_CHECK_LIMIT <= CHUNK_ROWS, true, 'the check fits in one chunk');
  // Prepared (held): the runner never runs it, so the rows stay as frozen. No status rows: every event is unknown.
  const rows = Array.from({ length: CHUNK_ROWS * 2 + 1 }, (_, i) => ({ endpointId: 'outcomeep', eventId: `e-${i}`, sessionId: 'S' }));
  const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: 'outcomeep' }, rows, startedBy: 'test', ratePerSecond: 0, hold: true });
  assert.equal(job.chunks, 3);

  const chunkReads: string[] = [];
  const read = jobs.docs.read.bind(jobs.docs);
  jobs.docs.read = <T>(name: string) => {
    if (name.startsWith('jobsel_')) chunkReads.push(name);
    return read<T>(name);
  };
  try {
    const outcome = await outcomeOf(ctx, job);
    assert.equal(outcome.checked, OUTCOME_CHECK_LIMIT);
    assert.equal(outcome.total, rows.length);
    assert.equal(outcome.counts.unknown, OUTCOME_CHECK_LIMIT);
    assert.deepEqual(chunkReads, [`jobsel_${job.operationId}_0`]);
  } finally {
    jobs.docs.read = read;
  }
});

test('events frozen without their session are found by their rows on the endpoint (one query, not one per event)', async () => {
  const { getContext } = await import('../context.ts');
  const ctx = await getContext(process.env);
  const { jobs } = getOperations(ctx);
  const EP = 'sessionlessep';
  // Two failed events as the Resolver records them; a third event has no row at all.
  for (const eventId of ['f-0', 'f-1']) {
    const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId: `S-${eventId}`, eventTypeId: 'CustomerUpdated', payload: {} });
    const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId: `S-${eventId}`, parentMessageId: request.messageId, errorType: 'Boom', errorText: 'boom' });
    for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  }
  const rows = ['f-0', 'f-1', 'missing'].map((eventId) => ({ endpointId: EP, eventId }));
  const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP }, rows, startedBy: 'test', ratePerSecond: 0, hold: true });
  const outcome = await outcomeOf(ctx, job);
  assert.equal(outcome.checked, 3);
  assert.deepEqual(outcome.counts, { completed: 0, failedAgain: 0, stillFailed: 2, inProgress: 0, skipped: 0, unknown: 1 });
});
