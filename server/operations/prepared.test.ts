// The confirmation of a bulk job (Failures → Skip all → "Skip 6 events?") on the embedded stack (real Service Bus
// emulator, embedded Cosmos, the route handlers as Next calls them): the selection is frozen as a *prepared* job,
// which no one sees in the jobs list and the runner never runs. Cancel discards it and the audit log says what
// happened - prepared, then cancelled - with no "succeeded" skip and no "failed (200)" job. Confirm starts it at
// once (queued, never paused), under a title naming the failure group, with its times and a link to its events.
// A prepared job never confirmed expires by itself (audited as cancelled); a confirmation after its deadline is
// refused. A running job cancelled by the operator is audited as cancelled, not failed. With sign-in on, only the
// Operator who prepared a job may confirm or cancel it (its commands are audited under the preparer's name); an
// Owner may cancel anyone's (cleanup).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType as T } from '@nimbus/sdk/contract';
import { msg } from '../../lib/store/testing/fixtures.ts';
import { queryAudit, type AuditRecord } from '../audit/auditLog.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { routeRequest, startRouteTestStack, type ConsoleTestStack } from '../testing/routeStack.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { JobStore } from './jobs.ts';
import type { OperationSummary } from './routes.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'crmendpoint';
let stack: ConsoleTestStack;

before(async () => {
  stack = await startRouteTestStack('preparedjobs');
});
after(() => stack?.close());

const SECRET = 'prepared-jobs-test-session-secret-0123456789';
/** A request signed in as `as` (its session cookie sealed here); without one, anonymous (sign-in off). */
const req = (method: string, path: string, body?: unknown, as?: Principal) =>
  routeRequest(method, path, body, as ? { cookie: `${SESSION_COOKIE}=${sealSession(as, { secret: SECRET, maxAgeSeconds: 600 })}` } : undefined);

/** n Failed events of one cause (as the Resolver records them), in the cause's own session. */
async function seedFailed(prefix: string, n: number, errorType: string, errorText: (i: number) => string): Promise<void> {
  for (let i = 0; i < n; i++) {
    const eventId = `${prefix}-${i}`;
    const sessionId = `S-${prefix}`;
    const request = msg(T.EventRequest, { endpointId: EP, eventId, sessionId, eventTypeId: 'CustomerUpdated', payload: { i } });
    const error = msg(T.ErrorResponse, { endpointId: EP, eventId, sessionId, parentMessageId: request.messageId, errorType, errorText: errorText(i) });
    for (const m of [request, error]) await stack.store.recordOutcome({ history: { ...m, enqueuedAt: new Date().toISOString() } as never, status: m });
  }
}

const routes = async () => ({
  ops: await import('../../app/api/operations/route.ts'),
  one: await import('../../app/api/operations/[operationId]/route.ts'),
  outcome: await import('../../app/api/operations/[operationId]/outcome/route.ts'),
  resume: await import('../../app/api/operations/[operationId]/resume/route.ts'),
  cancel: await import('../../app/api/operations/[operationId]/cancel/route.ts'),
  groups: await import('../../app/api/failure-groups/route.ts'),
});
const params = (operationId: string) => ({ params: Promise.resolve({ operationId }) });

async function groupOf(errorType: string): Promise<{ groupId: string; title: string; count: number }> {
  const { groups } = await routes();
  const body = (await (await groups.GET(req('GET', `/api/failure-groups?endpointId=${EP}`))).json()) as { groups: Array<{ groupId: string; title: string; count: number; errorType: string }> };
  const g = body.groups.find((x) => x.errorType === errorType);
  assert.ok(g, JSON.stringify(body.groups));
  return g;
}

async function list(): Promise<OperationSummary[]> {
  const { ops } = await routes();
  return ((await (await ops.GET(req('GET', '/api/operations'))).json()) as { operations: OperationSummary[] }).operations;
}

async function view(operationId: string, as?: Principal): Promise<{ state: string; total: number; done: number; expiresAt?: string | null }> {
  const { one } = await routes();
  return (await (await one.GET(req('GET', `/api/operations/${operationId}`, undefined, as), params(operationId))).json()) as never;
}

/** Every audit entry that names the job (its target, or its id in the details: the creation's entry). */
async function auditsOf(operationId: string): Promise<AuditRecord[]> {
  const items = (await queryAudit(stack.store.database, { pageSize: 200 })).items;
  return items.filter((a) => a.target === `operation/${operationId}` || JSON.stringify(a.details ?? {}).includes(operationId)).reverse();
}
const line = (a: AuditRecord) => `${a.action} ${a.target ?? a.endpointId ?? ''} ${a.outcome} (${a.status})`;

async function prepare(kind: 'skip' | 'resubmit', selection: unknown, as?: Principal): Promise<{ operationId: string; total: number; state: string }> {
  const { ops } = await routes();
  const created = await ops.POST(req('POST', '/api/operations', { kind, selection, hold: true }, as));
  assert.equal(created.status, 202, await created.clone().text());
  return (await created.json()) as never;
}

describe('a bulk job awaiting its confirmation', () => {
  test('cancelled in the confirmation: never listed, audited as prepared then cancelled, nothing sent', { timeout: 300_000 }, async () => {
    await seedFailed('crm', 6, 'CrmUnavailableError', (i) => `CRM API answered 503 Service Unavailable while updating CUST-${i}`);
    const group = await groupOf('CrmUnavailableError');
    assert.equal(group.count, 6);
    const { cancel } = await routes();

    const prepared = await prepare('skip', { groupId: group.groupId });
    assert.equal(prepared.total, 6);
    assert.equal(prepared.state, 'prepared', 'a job waiting for its confirmation is not a paused job');
    const v = await view(prepared.operationId);
    assert.equal(v.state, 'prepared');
    assert.ok(v.expiresAt && Date.parse(v.expiresAt) > Date.now(), `it has a deadline (${v.expiresAt})`);
    assert.equal((await list()).find((o) => o.operationId === prepared.operationId), undefined, 'an open confirmation is not a job in the drawer');

    const cancelled = await cancel.POST(req('POST', `/api/operations/${prepared.operationId}/cancel`), params(prepared.operationId));
    assert.equal(cancelled.status, 200, await cancelled.clone().text());
    assert.equal(((await cancelled.json()) as { state: string }).state, 'discarded');
    assert.equal((await view(prepared.operationId)).state, 'discarded');
    assert.equal((await list()).find((o) => o.operationId === prepared.operationId), undefined, 'a job that never ran is not listed');
    // Its frozen selection is deleted at once (it never runs; before, it stayed for ever); its follow-up still
    // answers, with no events (read from the deleted selection, it was a 500).
    const jobs = new JobStore(new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! }));
    try {
      assert.equal(await jobs.docs.read(`jobsel_${prepared.operationId}_0`), null, 'the selection is deleted when the job is discarded');
      const outcome = await (await routes()).outcome.GET(req('GET', `/api/operations/${prepared.operationId}/outcome`), params(prepared.operationId));
      assert.equal(outcome.status, 200, await outcome.clone().text());
      assert.equal(((await outcome.json()) as { checked: number }).checked, 0);
    } finally {
      jobs.docs.close();
    }

    // The runner has had its chance to record the discarded job: a later job, run by the same runner, is finished
    // and audited. Nothing of the discarded one's may appear as a failure.
    const later = await (await routes()).ops.POST(req('POST', '/api/operations', { kind: 'resubmit', selection: { endpointId: EP, eventIds: ['crm-0'] } }));
    assert.equal(later.status, 202, await later.clone().text());
    const laterId = ((await later.json()) as { operationId: string }).operationId;
    await waitFor('the later job audited', async () => (await auditsOf(laterId)).some((a) => a.action === 'operation.resubmit'));

    const trail = await auditsOf(prepared.operationId);
    assert.deepEqual(trail.map(line), [`skip.prepare ${EP} succeeded (202)`, `skip operation/${prepared.operationId} cancelled (200)`]);
    const [, cancelEntry] = trail;
    assert.equal((cancelEntry!.details as { total?: number }).total, 6, 'the cancellation says what was not done');
    // Nothing was skipped: crm-1..5 are still Failed (crm-0 was resubmitted by the later job).
    const rows = await stack.store.listEvents({ endpointId: EP, statuses: ['Failed'], pageSize: 100 });
    const failed = new Set(rows.items.map((r) => r.eventId));
    for (let i = 1; i < 6; i++) assert.ok(failed.has(`crm-${i}`), `crm-${i} is still Failed`);

    // Past its retention the job is deleted with its documents (prune.ts): it then reads as an unknown id does.
    const pruning = new JobStore(new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! }));
    try {
      await pruning.remove((await pruning.get(prepared.operationId))!);
      const { one, outcome } = await routes();
      for (const answer of [
        await one.GET(req('GET', `/api/operations/${prepared.operationId}`), params(prepared.operationId)),
        await outcome.GET(req('GET', `/api/operations/${prepared.operationId}/outcome`), params(prepared.operationId)),
      ]) {
        assert.equal(answer.status, 404, await answer.clone().text());
        assert.match(await answer.text(), /is not known/);
      }
    } finally {
      pruning.docs.close();
    }
  });

  test('confirmed: queued at once, listed under the group title with its times and events link, never paused', { timeout: 300_000 }, async () => {
    await seedFailed('tax', 4, 'TaxServiceError', (i) => `tax service rejected ORD-${i}: region 'EU' not configured`);
    const group = await groupOf('TaxServiceError');
    const { resume } = await routes();
    const prepared = await prepare('skip', { endpointId: EP, groupId: group.groupId });
    const started = await resume.POST(req('POST', `/api/operations/${prepared.operationId}/resume`), params(prepared.operationId));
    assert.equal(started.status, 200, await started.clone().text());
    assert.equal(((await started.json()) as { state: string }).state, 'queued', 'the confirmation starts it: not paused until the runner comes by');

    const states = new Set<string>();
    let listed: OperationSummary | undefined;
    await waitFor('completed', async () => {
      listed = (await list()).find((o) => o.operationId === prepared.operationId);
      if (listed) states.add(listed.state);
      return listed?.state === 'completed';
    });
    assert.equal(states.has('paused'), false, `states seen: ${[...states].join(', ')}`);
    assert.ok(listed);
    assert.ok(listed.title.includes(group.title.slice(0, 30)), `the title names the cause: ${listed.title} (group: ${group.title})`);
    assert.ok(listed.title.startsWith('skip'), listed.title);
    assert.ok(!listed.title.includes(group.groupId.slice(0, 8)), `no hash in the title: ${listed.title}`);
    assert.ok(listed.startedAt && listed.finishedAt && Date.parse(listed.finishedAt) >= Date.parse(listed.startedAt), JSON.stringify(listed));
    assert.equal(listed.eventsLink, `/endpoints/${EP}?groupId=${group.groupId}`);
    assert.equal(listed.done, 4);

    await waitFor('the finished job audited', async () => (await auditsOf(prepared.operationId)).some((a) => a.action === 'operation.skip'));
    const trail = await auditsOf(prepared.operationId);
    assert.deepEqual(trail.map(line), [
      `skip.prepare ${EP} succeeded (202)`,
      `skip operation/${prepared.operationId} succeeded (200)`,
      `operation.skip operation/${prepared.operationId} succeeded (200)`,
    ]);
    assert.equal((trail[1]!.details as { control?: string }).control, 'start');
  });

  test('never confirmed: it expires by itself (audited as cancelled); a confirmation after its deadline is refused', { timeout: 300_000 }, async () => {
    await seedFailed('ttl', 3, 'LedgerLockedError', (i) => `ledger period locked for INV-${i}`);
    // A store whose prepared jobs expire at once: the console's runner discards them at its next scan.
    const docs = new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! });
    try {
      const { getContext } = await import('../context.ts');
      const { getOperations } = await import('./service.ts');
      getOperations(await getContext()); // the console's runner, as after any operations request
      const { freezeSelection } = await import('./selection.ts');
      const selection = { endpointId: EP, errorText: 'ledger period locked' };
      const rows = await freezeSelection(stack.store, selection, { all: true });
      assert.equal(rows.length, 3);

      const expiring = new JobStore(docs, { preparedTtlMs: 1 });
      const job = await expiring.create({ kind: 'resubmit', selection, rows, startedBy: 'tester', ratePerSecond: 0, hold: true });
      await waitFor('expired', async () => (await view(job.operationId)).state === 'discarded');
      const trail = await auditsOf(job.operationId);
      assert.deepEqual(trail.map(line), [`operation.resubmit operation/${job.operationId} cancelled (200)`]);
      assert.match(trail[0]!.reason ?? '', /not confirmed within 10 min/);
      const { resume } = await routes();
      const late = await resume.POST(req('POST', `/api/operations/${job.operationId}/resume`), params(job.operationId));
      assert.equal(late.status, 400, 'a discarded job cannot be started');

      // A confirmation that comes after the deadline, before the runner came by: refused, the job discarded.
      const slow = await new JobStore(docs, { preparedTtlMs: 60_000 }).create({ kind: 'resubmit', selection, rows, startedBy: 'tester', ratePerSecond: 0, hold: true });
      const answer = await expiring.settlePrepared(slow.operationId, 'confirm', 'tester', Date.now() + 120_000);
      assert.equal(answer.result, 'expired');
      assert.equal(answer.job?.state, 'discarded');
      assert.equal(answer.job?.discardReason, 'expired');
    } finally {
      docs.close();
    }
  });

  test('a cancel that loses the race to a confirmation is still carried out: the job stops instead of running to its end', { timeout: 300_000 }, async () => {
    await seedFailed('race', 40, 'RaceServiceError', (i) => `race service rejected ORD-${i}`);
    const group = await groupOf('RaceServiceError');
    const { resume } = await routes();
    // One command a second: the job is still running when the cancel comes.
    process.env.NIMBUS_OPERATIONS_RATE = '1';
    const prepared = await prepare('skip', { endpointId: EP, groupId: group.groupId }).finally(() => delete process.env.NIMBUS_OPERATIONS_RATE);
    const { getContext } = await import('../context.ts');
    const { getOperations } = await import('./service.ts');
    const { controlOperation } = await import('./routes.ts');
    const ctx = await getContext();
    // The cancelling tab read the job while it was still awaiting its confirmation…
    const seenByCanceller = await getOperations(ctx).jobs.get(prepared.operationId);
    assert.equal(seenByCanceller?.state, 'prepared');
    // …and another tab confirmed it before the cancel was written.
    const started = await resume.POST(req('POST', `/api/operations/${prepared.operationId}/resume`), params(prepared.operationId));
    assert.equal(started.status, 200, await started.clone().text());
    const answer = await controlOperation(ctx, seenByCanceller!, 'cancel', 'tester');
    assert.equal(answer.requested, 'cancel', JSON.stringify(answer));
    assert.equal((await getOperations(ctx).jobs.control(prepared.operationId))?.control, 'cancel');
    await waitFor('the job stopped', async () => ['cancelled', 'completed'].includes((await view(prepared.operationId)).state));
    const end = await view(prepared.operationId);
    assert.equal(end.state, 'cancelled', JSON.stringify(end));
    assert.ok(end.done < end.total, JSON.stringify(end));
  });

  test('a running job cancelled by the operator is audited as cancelled, not as failed', { timeout: 300_000 }, async () => {
    await seedFailed('slow', 40, 'SlowError', (i) => `slow partner timeout for CUST-${i}`);
    process.env.NIMBUS_OPERATIONS_RATE = '2';
    try {
      const { ops, cancel } = await routes();
      const created = await ops.POST(req('POST', '/api/operations', { kind: 'resubmit', selection: { endpointId: EP, errorText: 'slow partner' } }));
      assert.equal(created.status, 202, await created.clone().text());
      const { operationId } = (await created.json()) as { operationId: string };
      await waitFor('running', async () => (await view(operationId)).done > 0);
      assert.equal((await cancel.POST(req('POST', `/api/operations/${operationId}/cancel`), params(operationId))).status, 200);
      await waitFor('the cancelled job audited', async () => (await auditsOf(operationId)).some((a) => a.action === 'operation.resubmit'));
      const finished = (await auditsOf(operationId)).find((a) => a.action === 'operation.resubmit')!;
      assert.equal(line(finished), `operation.resubmit operation/${operationId} cancelled (200)`);
    } finally {
      delete process.env.NIMBUS_OPERATIONS_RATE;
    }
  });

  test("another Operator cannot confirm or cancel someone else's prepared job (403, audited as denied); an Owner may cancel it", { timeout: 300_000 }, async () => {
    await seedFailed('own', 3, 'OwnershipError', (i) => `ownership check failed for CUST-${i}`);
    const group = await groupOf('OwnershipError');
    const alice: Principal = { kind: 'user', id: 'oid-alice', name: 'alice@test', roles: ['Operator'], groups: [] };
    const bob: Principal = { kind: 'user', id: 'oid-bob', name: 'bob@test', roles: ['Operator'], groups: [] };
    const owner: Principal = { kind: 'user', id: 'oid-owner', name: 'owner@test', roles: ['Owner'], groups: [] };
    const authEnv = oidcTestEnv(SECRET, { roles: { Operator: 'Operator', Owner: 'Owner' } });
    const saved = Object.fromEntries(Object.keys(authEnv).map((k) => [k, process.env[k]]));
    Object.assign(process.env, authEnv);
    try {
      const { resume, cancel } = await routes();
      const mine = await prepare('skip', { endpointId: EP, groupId: group.groupId }, alice);
      const startedAt = new Date(Date.now() - 1000).toISOString();
      for (const [name, route] of [['resume', resume], ['cancel', cancel]] as const) {
        const res = await route.POST(req('POST', `/api/operations/${mine.operationId}/${name}`, undefined, bob), params(mine.operationId));
        const body = (await res.json()) as { detail?: string };
        assert.equal(res.status, 403, `${name} by another Operator: ${JSON.stringify(body)}`);
        assert.match(body.detail ?? '', /prepared by alice@test; prepare your own/);
      }
      assert.equal((await view(mine.operationId, alice)).state, 'prepared', 'still waiting for its preparer');
      const denied = (await queryAudit(stack.store.database, { user: 'bob@test', from: startedAt, pageSize: 10 })).items;
      assert.deepEqual(
        denied.map((a) => `${a.target} ${a.outcome} (${a.status})`),
        [`operation/${mine.operationId} denied (403)`, `operation/${mine.operationId} denied (403)`],
      );

      // An Owner cleans up someone else's open confirmation.
      const cleaned = await cancel.POST(req('POST', `/api/operations/${mine.operationId}/cancel`, undefined, owner), params(mine.operationId));
      assert.equal(cleaned.status, 200, await cleaned.clone().text());
      assert.equal((await view(mine.operationId, alice)).state, 'discarded');

      // The preparer confirms their own: it runs, its commands audited under the name of who confirmed.
      const again = await prepare('skip', { endpointId: EP, groupId: group.groupId }, alice);
      const started = await resume.POST(req('POST', `/api/operations/${again.operationId}/resume`, undefined, alice), params(again.operationId));
      assert.equal(started.status, 200, await started.clone().text());
      await waitFor('completed', async () => (await view(again.operationId, alice)).state === 'completed');
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
