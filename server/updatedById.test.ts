// Changes to how the platform runs record who made them by stable id as well as by display name (embedded stack, real
// clients, sign-in on with real session cookies): a subscription's pause and a dead-letter replay (the topology's
// history entries, the replay's operation and journal records), alert rules and channels (`updatedById`), and role
// grants (`grantedById`). Two people share a display name and a name changes in Entra; the id does neither. Records
// written before the id was recorded still read, without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Prop, Topic } from '@nimbus/sdk/contract';
import { SESSION_COOKIE, sealSession } from './auth/session.ts';
import type { Principal } from './auth/principal.ts';
import { useConsoleStack } from './testing/consoleStack.ts';
import { oidcTestEnv } from './testing/oidcEnv.ts';
import { routeRequest } from './testing/routeStack.ts';
import { sendAndDeadLetter } from './testing/resolverDeadLetter.ts';
import { TOPOLOGY_AUDIT_EVENT } from './subscriptions/replay.ts';
import { JOURNAL_CONTAINER } from './subscriptions/replayJournal.ts';
import { grantSchema } from './auth/grants.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'updated-by-id-test-session-secret-0123456789-abcdef';

const stack = useConsoleStack({ database: 'updated-by-id', env: { ...oidcTestEnv(SECRET), NIMBUS_RATE_LIMIT_BURST: '1000' } });

// The Owner whose changes these are; another person of the same name would be told apart only by the id.
const owner: Principal = { kind: 'user', id: 'oid-pat-owner', name: 'Pat Smith', roles: ['Owner'], groups: [] };
const OWNER_ID = 'user:oid-pat-owner';

const request = (method: string, body?: unknown) =>
  routeRequest(method, '/api/x', body, { cookie: `${SESSION_COOKIE}=${sealSession(owner, { secret: SECRET, maxAgeSeconds: 600 })}` });
const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const topologyTrail = async () => (await stack.store.listAudits(TOPOLOGY_AUDIT_EVENT, { pageSize: 100 })).items;

test("a subscription's pause and resume name the Owner's stable id in the topology's history", async () => {
  const actions = await import('../app/api/topology/subscriptions/[topic]/[subscription]/actions/route.ts');
  const p = params({ topic: Topic.Resolver, subscription: Topic.Resolver });
  for (const action of ['pause', 'resume']) {
    const r = await actions.POST(request('POST', { action, confirm: Topic.Resolver }), p);
    assert.equal(r.status, 200, await r.clone().text());
  }
  // Before, both entries said only "Pat Smith".
  const entries = (await topologyTrail()).filter((a) => a.type === 'PauseSubscription' || a.type === 'ResumeSubscription');
  assert.deepEqual(entries.map((a) => [a.type, a.auditor, a.auditorId]).sort(), [
    ['PauseSubscription', 'Pat Smith', OWNER_ID],
    ['ResumeSubscription', 'Pat Smith', OWNER_ID],
  ]);
});

test("a dead-letter replay records the starter's stable id on its operation, its journal record and its history entry", async () => {
  // One dead letter on the Resolver subscription, as routes.test.ts makes it.
  await sendAndDeadLetter(
    stack.serviceBus.client,
    { messageId: randomUUID(), sessionId: `s-${randomUUID()}`, body: Buffer.from('{"EventContent":null}'), applicationProperties: { [Prop.To]: 'Resolver', [Prop.MessageType]: 'ResolutionResponse' } },
    { deadLetterReason: 'Test', deadLetterErrorDescription: 'for the replay' },
  );

  const replay = await import('../app/api/topology/subscriptions/[topic]/[subscription]/replay/route.ts');
  const op = await import('../app/api/topology/operations/[operationId]/route.ts');
  const started = await replay.POST(request('POST', { all: true }), params({ topic: Topic.Resolver, subscription: Topic.Resolver }));
  assert.equal(started.status, 202, await started.clone().text());
  const { operationId } = (await started.json()) as { operationId: string };
  let done: { state: string; replayed: number; auditor: string; auditorId?: string } | undefined;
  // A positive signal: the operation's own record says when it is done.
  for (;;) {
    const r = (await (await op.GET(request('GET'), params({ operationId }))).json()) as NonNullable<typeof done>;
    if (r.state !== 'running') {
      done = r;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.deepEqual([done.state, done.replayed, done.auditor, done.auditorId], ['done', 1, 'Pat Smith', OWNER_ID]);
  const { resources: records } = await stack.store.database
    .container(JOURNAL_CONTAINER)
    .items.query<{ operationId: string; auditor: string; auditorId?: string }>({ query: 'SELECT * FROM c WHERE c.operationId = @op', parameters: [{ name: '@op', value: operationId }] })
    .fetchAll();
  assert.deepEqual(records.map((r) => [r.auditor, r.auditorId]), [['Pat Smith', OWNER_ID]]);
  const entry = (await topologyTrail()).find((a) => a.type === 'ReplayDeadLetters');
  assert.deepEqual([entry?.auditor, entry?.auditorId], ['Pat Smith', OWNER_ID]);
});

test('an alert rule and an alert channel record updatedById beside updatedBy', async () => {
  const channels = await import('../app/api/admin/alerts/channels/route.ts');
  const rules = await import('../app/api/admin/alerts/rules/route.ts');
  const channel = await channels.POST(request('POST', { type: 'email', name: 'oncall', host: 'smtp.example.test', port: 587, from: 'nimbus@example.test', to: ['oncall@example.test'] }));
  assert.equal(channel.status, 201, await channel.clone().text());
  const { id: channelId } = (await channel.json()) as { id: string };
  const rule = await rules.POST(request('POST', { name: 'dead letters', type: 'deadLetterBacklog', threshold: 10, channelIds: [channelId] }));
  assert.equal(rule.status, 201, await rule.clone().text());
  const list = (await (await rules.GET(request('GET'))).json()) as { rules: Array<{ updatedBy: string; updatedById?: string }>; channels: Array<{ updatedBy: string; updatedById?: string }> };
  // Before, both said only "Pat Smith".
  assert.deepEqual(
    [...list.rules, ...list.channels].map((d) => [d.updatedBy, d.updatedById]),
    [
      ['Pat Smith', OWNER_ID],
      ['Pat Smith', OWNER_ID],
    ],
  );
});

test('a role grant records grantedById beside grantedBy; a grant stored before it still reads', async () => {
  const grants = await import('../app/api/admin/grants/route.ts');
  const r = await grants.POST(request('POST', { subjectKind: 'user', subject: 'oid-someone', subjectName: 'Someone', role: 'Reader' }));
  assert.equal(r.status, 201, await r.clone().text());
  const listed = (await (await grants.GET(request('GET'))).json()) as { grants: Array<{ subject: string; grantedBy: string; grantedById?: string }> };
  const g = listed.grants.find((x) => x.subject === 'oid-someone');
  // Before, grantedBy alone: "Pat Smith".
  assert.deepEqual([g?.grantedBy, g?.grantedById], ['Pat Smith', OWNER_ID]);
  const old = grantSchema.parse({ subjectKind: 'user', subject: 'oid-old', role: 'Reader', endpointId: null, id: 'x', subjectName: null, grantedBy: 'old-owner', grantedAt: '2026-01-01T00:00:00.000Z' });
  assert.equal(old.grantedById, undefined);
});
