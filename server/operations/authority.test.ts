// A bulk job acts with its starter's role for as long as it runs: a role revoked meanwhile (its grant removed or
// lowered) stops the job before its next lot, with "stopped: <user> no longer holds <role> on <endpoint>" on the job
// and in its audit record. The role is re-checked only where grants alone gave it (authority.ts): a role from the
// sign-in token's claims has no server-side record to re-check. The run on the embedded platform (real Service Bus
// emulator, embedded Cosmos, real grants container); the recording and lapse rules as pure functions.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaseStore } from '../../lib/store/index.ts';
import { queryAudit, auditQuerySchema } from '../audit/auditLog.ts';
import type { ConsoleContext } from '../context.ts';
import { auditFinishedJob } from './service.ts';
import { startConsoleTestStack, type ConsoleTestStack } from '../testing/stack.ts';
import { PlatformDocs } from '../heartbeat/platformDocs.ts';
import { Manager } from '../manager/manager.ts';
import { addGrant, listGrants, removeGrant, type Grant } from '../auth/grants.ts';
import type { RoleAssignment } from '../auth/roles.ts';
import { JobStore, type Job } from './jobs.ts';
import { OperationsRunner } from './runner.ts';
import { freezeSelection } from './selection.ts';
import { grantedAuthority, lapsedEndpoints, lapseReason } from './authority.ts';
import { waitFor } from '../../lib/testing/waitFor.ts';
import { seedFailedEvents } from './testing/failedEvents.ts';
import { beforeReceiptRead, receiptReadFails } from './testing/receiptReads.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const EP = 'billingendpoint';

const grant = (id: string, over: Partial<Grant> = {}): Grant => ({
  id,
  subjectKind: 'user',
  subject: 'oid-pat',
  subjectName: null,
  role: 'Operator',
  endpointId: EP,
  grantedBy: 'owner',
  grantedAt: '2026-01-01T00:00:00.000Z',
  ...over,
});

test('the authority recorded is the grants a role rests on alone; a claim-given role records nothing to re-check', () => {
  const grants = [grant('g1'), grant('g2', { subjectKind: 'group', subject: 'ops', endpointId: null })];
  const fromGrants: RoleAssignment[] = [
    { role: 'Operator', endpointId: EP, source: 'grant:g1' },
    { role: 'Operator', endpointId: null, source: 'grant:g2' },
  ];
  assert.deepEqual(grantedAuthority(fromGrants, grants, 'Operator', [EP]), {
    role: 'Operator',
    endpoints: [{ endpointId: EP, subjects: [{ subjectKind: 'user', subject: 'oid-pat' }, { subjectKind: 'group', subject: 'ops' }] }],
  });
  // A token's role claim covers the endpoint too: there is no record of it to re-check, so nothing is recorded.
  assert.equal(grantedAuthority([...fromGrants, { role: 'Owner', endpointId: null, source: 'roles:Owner' }], grants, 'Operator', [EP]), undefined);
  // A Reader grant gives no Operator role: not what the job rests on.
  assert.equal(grantedAuthority([{ role: 'Reader', endpointId: EP, source: 'grant:g1' }], [grant('g1', { role: 'Reader' })], 'Operator', [EP]), undefined);
});

test("the authority lapses when no grant to its subjects gives the role there any more: removed or lowered, not raised", () => {
  const authority = { role: 'Operator' as const, endpoints: [{ endpointId: EP, subjects: [{ subjectKind: 'user' as const, subject: 'oid-pat' }] }] };
  assert.deepEqual(lapsedEndpoints(authority, [grant('g1')]), []);
  assert.deepEqual(lapsedEndpoints(authority, []), [EP], 'removed');
  assert.deepEqual(lapsedEndpoints(authority, [grant('g3', { role: 'Reader' })]), [EP], 'lowered to Reader');
  assert.deepEqual(lapsedEndpoints(authority, [grant('g4', { endpointId: 'otherendpoint' })]), [EP], 'moved to another endpoint');
  assert.deepEqual(lapsedEndpoints(authority, [grant('g5', { subject: 'oid-someone-else' })]), [EP], "someone else's");
  assert.deepEqual(lapsedEndpoints(authority, [grant('g6', { role: 'Owner', endpointId: null })]), [], 'raised to Owner site-wide');
  assert.equal(lapseReason('Pat Smith', 'Operator', [EP]), `stopped: Pat Smith no longer holds Operator on ${EP}`);
});

let stack: ConsoleTestStack;
let manager: Manager;

before(async () => {
  stack = await startConsoleTestStack('opsauthority');
  manager = new Manager({ store: stack.store, client: stack.serviceBus.client });
});
after(async () => {
  await manager?.close();
  await stack?.close();
});

/**
 * Pat's resubmit job over three Failed events `prefix-i`, started on an Operator grant on EP alone (given here, so a
 * test can revoke it), with the authority recorded from that grant; `docs` is the caller's to close.
 */
async function jobOnGrant(prefix: string, ratePerSecond: number) {
  const database = stack.store.database;
  const given = await addGrant(database, { subjectKind: 'user', subject: 'oid-pat', role: 'Operator', endpointId: EP }, 'owner');
  const ids = await seedFailedEvents(stack.store, EP, prefix, 3);
  const docs = new PlatformDocs({ endpoint: stack.env.NIMBUS_COSMOS_ENDPOINT!, key: stack.env.NIMBUS_COSMOS_KEY!, database: stack.env.NIMBUS_COSMOS_DATABASE! });
  const jobs = new JobStore(docs);
  const rows = await freezeSelection(stack.store, { endpointId: EP, eventIds: ids }, { all: true });
  const authority = grantedAuthority([{ role: 'Operator', endpointId: EP, source: `grant:${given.id}` }], await listGrants(database, { fresh: true }), 'Operator', [EP]);
  const job = await jobs.create({ kind: 'resubmit', selection: { endpointId: EP, eventIds: ids }, rows, startedBy: 'Pat Smith', startedById: 'user:oid-pat', authority, ratePerSecond });
  return { database, given, ids, docs, jobs, authority, job };
}

/** Revokes the grant right after the first lot: the revocation lands while the job runs, between its lots. */
class RevokingAfterFirstLot extends Manager {
  lots = 0;
  constructor(private readonly revoke: () => Promise<unknown>) {
    super({ store: stack.store, client: stack.serviceBus.client });
  }
  override async executeMany(...args: Parameters<Manager['executeMany']>): ReturnType<Manager['executeMany']> {
    const out = await super.executeMany(...args);
    if (++this.lots === 1) await this.revoke();
    return out;
  }
}

test("a grant revoked while the job runs stops it before its next lot, with the reason on the job and its audit record", { timeout: 120_000 }, async () => {
  const { database, given, ids, docs, jobs, authority, job } = await jobOnGrant('revoked', 0);
  assert.ok(authority, 'recorded: the role rests on the grant alone');

  const revoking = new RevokingAfterFirstLot(() => removeGrant(database, given.id));
  const finished: Job[] = [];
  const runner = new OperationsRunner({
    store: stack.store,
    jobs,
    leases: new LeaseStore(database),
    manager: revoking,
    scanEveryMs: 3_600_000,
    concurrency: 1,
    onFinished: (j) => void finished.push(j),
    // As service.ts wires it: the grants read now.
    authorityLapsed: async (j) => {
      const lapsed = lapsedEndpoints(j.authority!, await listGrants(database, { fresh: true }));
      return lapsed.length > 0 ? lapseReason(j.startedBy, j.authority!.role, lapsed) : null;
    },
  });
  try {
    runner.kick();
    await waitFor('the job to end', async () => finished.length > 0, { timeoutMs: 60_000 });
  } finally {
    await runner.stop();
    await revoking.close();
    docs.close();
  }
  const end = finished[0]!;
  // Before, the job went on with the revoked role: completed, all three resubmitted.
  assert.deepEqual(
    [end.state, end.done, end.cursor, end.stoppedReason, revoking.lots],
    ['cancelled', 1, 1, `stopped: Pat Smith no longer holds Operator on ${EP}`, 1],
  );
  assert.deepEqual((await stack.store.listEventRows(EP, ids[2]!)).map((r) => r.status), ['Failed'], 'the last event was not acted on');
  // Its audit record (service.ts, the runner's onFinished in the console) names the reason.
  await auditFinishedJob({ store: stack.store } as ConsoleContext, end);
  const audit = await queryAudit(database, auditQuerySchema.parse({ action: 'operation.resubmit', pageSize: 50 }));
  const entry = audit.items.find((e) => e.target === `operation/${job.operationId}`);
  assert.deepEqual([entry?.outcome, entry?.reason], ['cancelled', `stopped: Pat Smith no longer holds Operator on ${EP}`]);
  // Filed under the starter's stable id, its display name beside it (before, the name was the id too).
  assert.deepEqual([entry?.actorKind, entry?.actorId, entry?.actorName], ['user', 'oid-pat', 'Pat Smith']);
});

// Before, a finished job's audit record gave its starter's display name as `actorId` (and `user` as its kind, a
// service principal's job too): two people of one name were one actor, and the record did not match the starter's
// other entries (prepare, start), which name the principal's id. A job from before `startedById` was stored names
// its starter by name only: that name stands in for the id.
test("a finished job's audit record names its starter by kind and stable id; a job from before startedById by its name", { timeout: 60_000 }, async () => {
  const ctx = { store: stack.store } as ConsoleContext;
  const ended = (operationId: string, starter: Pick<Job, 'startedBy' | 'startedById'>) =>
    ({ operationId, kind: 'resubmit', state: 'completed', endpoints: [EP], selection: { endpointId: EP }, total: 1, done: 1, refused: 0, failed: 0, ...starter }) as Job;
  await auditFinishedJob(ctx, ended('op-actor-user', { startedBy: 'Pat Smith', startedById: 'user:oid-pat' }));
  await auditFinishedJob(ctx, ended('op-actor-service', { startedBy: 'ERP app', startedById: 'service:erp-app' }));
  // An OIDC subject may hold a colon itself: only the first one separates the kind.
  await auditFinishedJob(ctx, ended('op-actor-colon', { startedBy: 'Sam', startedById: 'user:tenant-1:sam' }));
  await auditFinishedJob(ctx, ended('op-actor-old', { startedBy: 'Pat Smith' }));
  const audit = await queryAudit(stack.store.database, auditQuerySchema.parse({ action: 'operation.resubmit', pageSize: 50 }));
  const actor = (id: string) => {
    const e = audit.items.find((a) => a.target === `operation/${id}`);
    return [e?.actorKind, e?.actorId, e?.actorName];
  };
  assert.deepEqual(actor('op-actor-user'), ['user', 'oid-pat', 'Pat Smith']);
  assert.deepEqual(actor('op-actor-service'), ['service', 'erp-app', 'ERP app']);
  assert.deepEqual(actor('op-actor-colon'), ['user', 'tenant-1:sam', 'Sam']);
  assert.deepEqual(actor('op-actor-old'), ['user', 'Pat Smith', 'Pat Smith'], 'an older job: its name, the only record of who started it');
});

// Before, the reason was set on the job before the stop's receipt reads: a read that threw left the job running with
// "stopped: ..." written on it, and a later operator's cancel was recorded (and audited) with that text.
test("the receipt read failing at the stop leaves the job running without a reason; a later operator's cancel is recorded as the operator's", { timeout: 120_000 }, async () => {
  // Ten a second: lots of one, the in-flight mark saved ahead of the cursor (to the last row), so the stop after the
  // first lot reads the receipts of the rows between them.
  const { database, given, docs, jobs, job } = await jobOnGrant('unread', 10);
  let lapsed = false;
  let thrown = false;
  // Once the lapse is seen, the stop's first receipt read does not answer (the store stopping).
  const store = beforeReceiptRead(stack.store, () => {
    if (lapsed && !thrown) {
      thrown = true;
      receiptReadFails();
    }
  });
  const revoking = new RevokingAfterFirstLot(() => removeGrant(database, given.id));
  const holder = new OperationsRunner({
    store,
    jobs,
    leases: new LeaseStore(database),
    manager: revoking,
    scanEveryMs: 3_600_000,
    concurrency: 1,
    authorityLapsed: async (j) => {
      const gone = lapsedEndpoints(j.authority!, await listGrants(database, { fresh: true }));
      if (gone.length === 0) return null;
      lapsed = true;
      return lapseReason(j.startedBy, j.authority!.role, gone);
    },
  });
  const finished: Job[] = [];
  const next = new OperationsRunner({
    store: stack.store,
    jobs,
    leases: new LeaseStore(database),
    manager,
    scanEveryMs: 3_600_000,
    concurrency: 1,
    onFinished: (j) => void finished.push(j),
    // The grant given back: the next run goes on, until the operator cancels it.
    authorityLapsed: async () => null,
  });
  try {
    holder.kick();
    await waitFor("the stop's receipt read to throw", async () => thrown, { timeoutMs: 60_000 });
    await holder.stop(); // its run has ended: the job written as it stood, still running
    const left = (await jobs.get(job.operationId))!;
    assert.deepEqual([left.state, left.cursor, left.stoppedReason], ['running', 1, undefined], 'running, with no reason written on it');
    await jobs.setControl(job.operationId, 'cancel', 'Olga Owner');
    next.kick();
    await waitFor('the job to end', async () => finished.length > 0, { timeoutMs: 60_000 });
  } finally {
    await holder.stop();
    await next.stop();
    await revoking.close();
    docs.close();
  }
  const end = finished[0]!;
  assert.deepEqual([end.state, end.stoppedReason], ['cancelled', undefined]);
  await auditFinishedJob({ store: stack.store } as ConsoleContext, end);
  const audit = await queryAudit(database, auditQuerySchema.parse({ action: 'operation.resubmit', pageSize: 50 }));
  const entry = audit.items.find((e) => e.target === `operation/${job.operationId}`);
  assert.deepEqual([entry?.outcome, entry?.reason], ['cancelled', 'cancelled'], "the operator's cancel, not the lapse");
});
