// Bulk operations on the embedded platform (real Service Bus emulator, embedded Cosmos, real clients):
//  - a 5,000-event resubmit job run by a console replica in a child process: progress moves, pause holds it,
//    resume continues, kill -9 of that replica mid-job and a second replica (the "restarted console") resumes it
//    from its saved cursor; at the end every event was acted on exactly once, counted as commands on the wire
//    (received from the endpoint's subscription), and events changed after the selection was frozen are counted
//    as refused, not as errors;
//  - the routes: POST /api/operations freezes the selection (202 { operationId, total }), GET reads it, cancel
//    stops it, GET /api/operations lists it; a bad selection is a 400. Sign-in is off here (an anonymous Owner): who
//    may pause, resume or cancel a job is server/auth/routeMatrix.test.ts's.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MessageType as T } from '@nimbus/sdk/contract';
import { LeaseStore } from '../../lib/store/index.ts';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { JobStore, type Job } from './jobs.ts';
import { freezeSelection } from './selection.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const EP = 'billingendpoint';
const SESSIONS = 5;
/** The job's size (OPS_TEST_EVENTS for a quicker local run). */
const N = Number(process.env.OPS_TEST_EVENTS ?? 5000);
const CHILD = fileURLToPath(new URL('./testing/runnerChild.ts', import.meta.url));

let stack: ConsoleTestStack;
let jobs: JobStore;
const children: ChildProcess[] = [];

before(async () => {
  stack = await startConsoleTestStack('operations');
  Object.assign(process.env, stack.env);
  jobs = new JobStore(new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! }));
});

after(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  const { closeContext } = await import('../context.ts');
  await closeContext();
  jobs?.docs.close();
  await stack?.close();
});

/** n Failed events (request with a payload, then an error), `prefix-i`, spread over SESSIONS sessions. */
async function seedFailed(prefix: string, n: number, endpointId = EP): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const i = next++;
      const eventId = ids[i]!;
      const sessionId = `S-${prefix}-${i % SESSIONS}`;
      // As the Resolver records them: each message's history entry and the status it leads to.
      const request = msg(T.EventRequest, { endpointId, eventId, sessionId, eventTypeId: 'OrderPlaced', payload: { i } });
      const error = msg(T.ErrorResponse, { endpointId, eventId, sessionId, parentMessageId: request.messageId, errorType: 'E', errorText: `boom ${i}` });
      for (const m of [request, error])
        await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return ids;
}

function startRunner(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD], { env: { ...process.env, NIMBUS_LOG_LEVEL: 'silent' }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((ok, fail) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && ok(child));
    child.once('exit', (code, signal) => {
      if (signal !== 'SIGKILL') process.stderr.write(`runner child exited: ${code} ${signal}\n`);
      fail(new Error(`runner exited with ${code}`));
    });
  });
}

const read = async (id: string): Promise<Job> => (await jobs.get(id))!;

/**
 * Every command that reached the endpoint's subscription: the distinct MessageIds per event id, and how many copies
 * arrived in all (received and deleted).
 */
async function commandsOnTheWire(prefix: string, atLeast: number): Promise<{ ids: Map<string, Set<string>>; copies: number }> {
  const seen = new Map<string, Set<string>>();
  let copies = 0;
  // An empty receive only says nothing arrived within its wait: on a loaded machine the emulator can take longer
  // than that to hand over the next batch, and a drain that stopped there undercounted the wire (192 of 4,960 once).
  // So the sessions are drained again until at least as many distinct events as the job reports done are seen (not
  // messages: repeated copies after the kill are expected and must not end the count early), and only a few rounds in a row
  // that bring nothing at all end the count early (then the assertions below say what is missing).
  for (let quietRounds = 0; seen.size < atLeast && quietRounds < 3; ) {
    const before = copies;
    for (let s = 0; s < SESSIONS; s++) {
      // Received and deleted: a session lock lost on a loaded machine only means accepting the session again.
      for (let drained = false; !drained; ) {
        const receiver = await stack.serviceBus.client.acceptSession(EP, EP, `S-${prefix}-${s}`, { receiveMode: 'receiveAndDelete' });
        try {
          for (;;) {
            const got = await receiver.receiveMessages(200, { maxWaitTimeInMs: 2000 });
            for (const m of got) {
              const eventId = String(m.applicationProperties?.EventId ?? '');
              seen.set(eventId, (seen.get(eventId) ?? new Set()).add(String(m.messageId)));
              copies++;
            }
            if (got.length === 0) {
              drained = true;
              break;
            }
          }
        } catch (err) {
          if ((err as { code?: string }).code !== 'SessionLockLost') throw err;
        } finally {
          await receiver.close().catch(() => undefined);
        }
      }
    }
    quietRounds = copies === before ? quietRounds + 1 : 0;
  }
  return { ids: seen, copies };
}

describe('bulk operations', () => {
  test('5,000 events: progress, pause, resume, kill -9 mid-job and resume elsewhere, each event once on the wire, refusals counted', { timeout: 1_800_000 }, async () => {
    const ids = await seedFailed('big', N);
    const rows = await freezeSelection(stack.store, { endpointId: EP, errorText: 'boom' }, { all: true });
    assert.equal(rows.length, N);
    const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP, errorText: 'boom' }, rows, startedBy: 'tester', ratePerSecond: 0 });
    // Events that change after the selection was frozen: the last 40 in the job's order get resolved.
    const changed = rows.slice(-40).map((r) => r.eventId);
    for (const eventId of changed) {
      const row = (await stack.store.listEventRows(EP, eventId))[0]!;
      await stack.store.writeStatus(msg(T.ResolutionResponse, { endpointId: EP, eventId, sessionId: row.sessionId, parentMessageId: row.lastMessageId }));
    }
    // A job created later does not grow this one: new failures are not swept in.
    await seedFailed('late', 3);

    const first = await startRunner();
    const status = async () => {
      const j = await read(job.operationId);
      return { state: j.state, done: j.done, refused: j.refused, failed: j.failed, cursor: j.cursor, runningMs: j.runningMs };
    };
    await waitFor('progress', async () => (await read(job.operationId)).done >= N / 10, { timeoutMs: 600_000, progress: status });
    await jobs.setControl(job.operationId, 'pause', 'tester');
    await waitFor('paused', async () => (await read(job.operationId)).state === 'paused');
    const pausedAt = (await read(job.operationId)).done;
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal((await read(job.operationId)).done, pausedAt, 'a paused job acts on nothing');
    await jobs.setControl(job.operationId, 'run', 'tester');
    await waitFor('resumed progress', async () => (await read(job.operationId)).done >= pausedAt + N / 5, { timeoutMs: 600_000, progress: status });
    first.kill('SIGKILL');
    await new Promise((r) => first.once('exit', r));
    const atCrash = await read(job.operationId);
    assert.equal(atCrash.state, 'running');
    assert.ok(atCrash.done < N - 40, 'the crash came mid-job');

    // The restarted console: takes the lease once the dead replica's expires, continues from the saved cursor.
    await startRunner();
    await waitFor('completed', async () => (await read(job.operationId)).state === 'completed', { timeoutMs: 1_500_000, progress: status });
    const end = await read(job.operationId);
    assert.equal(end.total, N);
    assert.equal(end.failed, 0, JSON.stringify(end.errors.slice(0, 3)));
    assert.equal(end.refused, 40, 'the events resolved after the freeze are refused, not errors');
    assert.equal(end.done, N - 40);

    // A replica killed after a send but before its receipt leaves a claim that the Manager re-sends after its grace
    // period with the same MessageId, so an event may see a second copy of its one command (which the endpoint's
    // inbox drops, and a topic with duplicate detection drops before that); never a second command.
    const { ids: wire, copies } = await commandsOnTheWire('big', end.done);
    const twice = [...wire.entries()].filter(([, set]) => set.size > 1).map(([id, set]) => [id, [...set]]);
    assert.deepEqual(twice, [], 'no event got two commands');
    console.log(`# ${copies - wire.size} repeated cop${copies - wire.size === 1 ? 'y' : 'ies'} of a command after the kill`);
    const expected = ids.filter((id) => !changed.includes(id));
    assert.equal(wire.size, expected.length, 'every selected event that still allowed it got its command');
    for (const id of changed) assert.equal(wire.has(id), false, `${id} changed meanwhile and got no command`);
    // Each event's audit names the job.
    const audits = await stack.store.listAudits(expected[0]!);
    assert.ok(audits.items.some((a) => a.type === 'Resubmit' && a.data?.includes(job.operationId)));
    // The lease was released with the job.
    assert.equal(await new LeaseStore(stack.store.database).holder(`operation_${job.operationId}`), undefined);
  });

  test('routes: create (frozen count), read, list, cancel; bad input 400', { timeout: 300_000 }, async () => {
    await seedFailed('route', 300, 'crmendpoint');
    process.env.NIMBUS_OPERATIONS_RATE = '20';
    const ops = await import('../../app/api/operations/route.ts');
    const one = await import('../../app/api/operations/[operationId]/route.ts');
    const cancel = await import('../../app/api/operations/[operationId]/cancel/route.ts');
    const req = (method: string, path: string, body?: unknown) =>
      new Request(`http://127.0.0.1:3000${path}`, {
        method,
        headers: { 'content-type': 'application/json', host: '127.0.0.1:3000' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const bad = await ops.POST(req('POST', '/api/operations', { kind: 'resubmit', selection: { status: ['Failed'] } }));
    assert.equal(bad.status, 400);
    const none = await ops.POST(req('POST', '/api/operations', { kind: 'skip', selection: { endpointId: 'crmendpoint', errorText: 'no such text' } }));
    assert.equal(none.status, 400);
    const created = await ops.POST(req('POST', '/api/operations', { kind: 'skip', selection: { endpointId: 'crmendpoint', errorText: 'boom' } }));
    assert.equal(created.status, 202, await created.clone().text());
    const { operationId, total } = (await created.json()) as { operationId: string; total: number };
    assert.equal(total, 300);
    const params = { params: Promise.resolve({ operationId }) };
    // Rate-limited to 20/s: it is still running when cancelled.
    await waitFor('running', async () => ((await (await one.GET(req('GET', `/api/operations/${operationId}`), params)).json()) as { done: number }).done > 0, { timeoutMs: 60_000 });
    assert.equal((await cancel.POST(req('POST', `/api/operations/${operationId}/cancel`), params)).status, 200);
    await waitFor('cancelled', async () => ((await (await one.GET(req('GET', `/api/operations/${operationId}`), params)).json()) as { state: string }).state === 'cancelled', { timeoutMs: 60_000 });
    const view = (await (await one.GET(req('GET', `/api/operations/${operationId}`), params)).json()) as { done: number; total: number; state: string };
    assert.ok(view.done > 0 && view.done < 300, `cancelled midway (done ${view.done})`);
    const list = (await (await ops.GET(req('GET', '/api/operations'))).json()) as { operations: Array<{ operationId: string; state: string }> };
    assert.equal(list.operations.find((o) => o.operationId === operationId)?.state, 'cancelled');
    const again = await cancel.POST(req('POST', `/api/operations/${operationId}/cancel`), params);
    assert.equal(again.status, 400, 'an ended job cannot be controlled');
  });
});
