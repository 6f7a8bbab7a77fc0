// Refusals that cost the console something an attacker chooses (embedded stack, real clients, sign-in on with
// real session cookies): unauthenticated calls aimed at one event (its trail must not fill with them), bodies
// sent by callers who may not act (refused before the body is read or validated), and the replay preview's
// dead-letter scans (rate-limited like the replay).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { seedEvent } from '../testing/seed.ts';
import { MessageType } from '@nimbus/sdk/contract';
import { SESSION_COOKIE, sealSession } from './session.ts';
import type { Principal } from './principal.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { unauthenticatedRefusals } from './authorize.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'refusals-test-session-secret-0123456789-abcdef';
const AUTH_ENV = oidcTestEnv(SECRET);
const READER: Principal = { kind: 'user', id: 'oid-reader', name: 'reader@test', roles: ['Reader'], groups: [] };
const OPERATOR: Principal = { kind: 'user', id: 'oid-operator', name: 'operator@test', roles: ['Operator'], groups: [] };

const stack = useConsoleStack({ database: 'refusals', env: AUTH_ENV, seed: true });
const seeded = stack.demo;

const params = <P>(p: P) => ({ params: Promise.resolve(p) });
const cookieOf = (p: Principal) => `${SESSION_COOKIE}=${sealSession(p, { secret: SECRET, maxAgeSeconds: 600 })}`;

function post(who: Principal | null, body?: string | ReadableStream<Uint8Array>): Request {
  const headers: Record<string, string> = { 'content-type': 'application/json', host: '127.0.0.1:3000' };
  if (who) headers.cookie = cookieOf(who);
  return new Request('http://127.0.0.1:3000/api/x', { method: 'POST', headers, body, duplex: 'half' } as RequestInit);
}

/** A 10 MB body that counts how much of it anybody reads. */
function hugeBody(): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  const chunk = new Uint8Array(256 * 1024).fill(0x20);
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled++;
      if (pulled > 40) controller.close();
      else controller.enqueue(chunk);
    },
  });
  return { body, pulled: () => pulled };
}

describe('refusals an attacker could aim', () => {
  test("unauthenticated refusals are counted, not written to the event's trail; a signed-in caller's still are", async () => {
    const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
    const target = params({ endpointId: 'billingendpoint', eventId: seeded.failed.eventId });
    const before = unauthenticatedRefusals();
    for (let i = 0; i < 5; i++) assert.equal((await skip.POST(post(null), target)).status, 401);
    assert.equal(unauthenticatedRefusals() - before, 5, 'each 401 counted');
    assert.equal((await skip.POST(post(READER), target)).status, 403);
    const trail = (await stack.store.listAudits(seeded.failed.eventId)).items.filter((a) => a.type === 'Denied');
    assert.deepEqual(
      trail.map((a) => a.auditor),
      ['reader@test'],
      "only the signed-in caller's refusal is in the event's trail",
    );
    // The site-level audit log keeps unauthenticated refusals (within its budget), without the caller's event id.
    const site = await queryAudit(stack.store.database, { user: 'unauthenticated', action: 'skip', pageSize: 10 });
    assert.ok(site.items.length > 0);
    assert.ok(site.items.every((e) => e.eventId === null));
  });

  test("a signed-in caller holding no console role writes no Denied entry into the event's trail, whatever it is named", async () => {
    // Any account of the tenant (or any app that can get a token for the console) holds no role and names itself:
    // before, its refused skip wrote "Denied … by operator@test" into the trail of any event it chose.
    const skip = await import('../../app/api/event/skip/[endpointId]/[eventId]/route.ts');
    const e = await seedEvent(stack.store, Date.now() - 60_000, { endpointId: 'billingendpoint', eventId: 'evt-roleless', sessionId: 'S-roleless', eventTypeId: 'OrderPlaced', payload: { orderId: 'O-1' } }, MessageType.ErrorResponse, { errorText: 'x' });
    const roleless: Principal = { kind: 'user', id: 'oid-nobody', name: 'operator@test', roles: [], groups: [] };
    assert.equal((await skip.POST(post(roleless), params({ endpointId: 'billingendpoint', eventId: e.eventId }))).status, 403);
    assert.deepEqual((await stack.store.listAudits(e.eventId)).items.filter((a) => a.type === 'Denied'), [], 'nothing in the trail');
    // Still in the site-level audit log, under its stable id.
    const site = await queryAudit(stack.store.database, { user: 'oid-nobody', action: 'skip', pageSize: 10 });
    assert.deepEqual(site.items.map((x) => [x.actorId, x.outcome, x.status]), [['oid-nobody', 'denied', 403]]);
    // A caller holding a role (a Reader) still has its refused attempt in the trail.
    assert.equal((await skip.POST(post(READER), params({ endpointId: 'billingendpoint', eventId: e.eventId }))).status, 403);
    assert.deepEqual((await stack.store.listAudits(e.eventId)).items.filter((a) => a.type === 'Denied').map((a) => a.auditor), ['reader@test']);
  });

  test('bulk resubmit/skip, reconcile and subscription actions refuse before reading or validating the body', async () => {
    const bulkResubmit = await import('../../app/api/event/resubmit/route.ts');
    const bulkSkip = await import('../../app/api/event/skip/route.ts');
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const subAction = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/actions/route.ts');
    const sub = params({ topic: 'billingendpoint', subscription: 'billingendpoint' });
    const routes: Array<[string, (r: Request) => Promise<Response>]> = [
      ['bulk resubmit', (r) => bulkResubmit.POST(r)],
      ['bulk skip', (r) => bulkSkip.POST(r)],
      ['reconcile', (r) => reconcile.POST(r)],
      ['subscription action', (r) => subAction.POST(r, sub)],
    ];
    for (const [name, call] of routes) {
      // A wrong body: before, the caller learned the schema from the 400.
      const bad = await call(post(null, JSON.stringify({ nonsense: true })));
      assert.equal(bad.status, 401, `${name}: unauthenticated, wrong body`);
      assert.doesNotMatch(await bad.text(), /invalid body/);
      assert.equal((await call(post(READER, JSON.stringify({ nonsense: true })))).status, 403, `${name}: a Reader, wrong body`);
      // A 10 MB body: refused before the server reads it.
      const huge = hugeBody();
      assert.equal((await call(post(null, huge.body))).status, 401, `${name}: unauthenticated, huge body`);
      assert.ok(huge.pulled() <= 1, `${name}: read ${huge.pulled()} chunks of the body before refusing`);
    }
    // Allowed callers still get their schema errors.
    assert.equal((await bulkSkip.POST(post(OPERATOR, JSON.stringify({ nonsense: true })))).status, 400);
  });

  test("a replay preview posted by another site is refused like a change: it would spend the user's rate limit", async () => {
    // The preview changes nothing, but it is a POST that scans a dead-letter queue and takes from the caller's
    // change budget: a sibling-subdomain page (its requests carry the Lax session cookie) or, with sign-in off, any
    // page could drive it and leave the operator with 429s.
    const preview = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
    const victim: Principal = { kind: 'user', id: 'oid-csrf-victim', name: 'csrf-victim@test', roles: ['Reader'], groups: [] };
    const sub = params({ topic: 'billingendpoint', subscription: 'billingendpoint' });
    const from = (headers: Record<string, string>) =>
      new Request('http://127.0.0.1:3000/api/x', {
        method: 'POST',
        headers: { 'content-type': 'application/json', host: '127.0.0.1:3000', cookie: cookieOf(victim), ...headers },
        body: JSON.stringify({ all: true }),
      });
    const sameSite = await preview.POST(from({ 'sec-fetch-site': 'same-site' }), sub);
    assert.equal(sameSite.status, 403, await sameSite.clone().text());
    assert.match(((await sameSite.json()) as { detail: string }).detail, /cross-site request refused/);
    const foreign = await preview.POST(from({ origin: 'http://attacker.test' }), sub);
    assert.equal(foreign.status, 403);
    assert.match(((await foreign.json()) as { detail: string }).detail, /cross-origin request refused/);
    const audit = await queryAudit(stack.store.database, { user: 'oid-csrf-victim', outcome: 'denied', pageSize: 10 });
    assert.equal(audit.items.length, 2, 'both refusals audited');
    assert.ok(audit.items.every((e) => e.status === 403 && e.target === 'billingendpoint/billingendpoint'));
    // From the console's own page it is still answered.
    assert.equal((await preview.POST(from({ 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:3000' }), sub)).status, 200);
  });

  test('a change that fails in the store is audited with the status and reason its caller got', async () => {
    // docs/security.md: "failed with the status and reason the caller got". A throttled or unreachable store is
    // answered 503 and a refused input 400 (server/http.ts); the audit entry said 500 "internal error" for both.
    const { audited, authorize } = await import('./authorize.ts');
    const { errorResponse } = await import('../http.ts');
    const { StoreInputError, StoreThrottledError } = await import('../../lib/store/index.ts');
    const actor: Principal = { kind: 'user', id: 'oid-store-outage', name: 'outage@test', roles: ['Operator'], groups: [] };
    for (const failure of [new StoreThrottledError('heartbeat send', 2000), new StoreInputError('heartbeat timeoutSeconds must not exceed intervalSeconds')]) {
      const who = await authorize(post(actor), 'heartbeat.send');
      const thrown = await audited(who, () => Promise.reject(failure)).then(
        () => assert.fail('audited must rethrow'),
        (err: unknown) => err,
      );
      const answer = errorResponse(thrown);
      const body = (await answer.json()) as { error: string; detail: string };
      const entries = (await queryAudit(stack.store.database, { user: 'oid-store-outage', action: 'heartbeat.send', outcome: 'failed', pageSize: 10 })).items;
      assert.deepEqual(
        entries.filter((e) => e.reason === `${body.error}: ${body.detail}`).map((e) => e.status),
        [answer.status],
        `${failure.name}: audited with the status and reason the caller got (${answer.status} ${body.error}); the log has ${JSON.stringify(entries.map((e) => [e.status, e.reason]))}`,
      );
    }
  });

  test('a change that passed authorization and then failed on its input is audited too', async () => {
    // docs/security.md: every mutating call that passed authorization is recorded with how it ended. A body that
    // does not validate, or an endpoint the catalog does not know, ended it before `audited` ran: no entry at all.
    const fail = await import('../../app/api/event/handoff/fail/[endpointId]/[eventId]/[messageId]/route.ts');
    const resubmit = await import('../../app/api/event/resubmit/[endpointId]/[eventId]/route.ts');
    const actor: Principal = { kind: 'user', id: 'oid-bad-input', name: 'bad-input@test', roles: ['Operator'], groups: [] };
    const badBody = await fail.POST(post(actor, JSON.stringify({ errorText: '' })), params({ endpointId: 'erpendpoint', eventId: 'evt-handoff-2', messageId: 'm-1' }));
    assert.equal(badBody.status, 400);
    const unknown = await resubmit.POST(post(actor), params({ endpointId: 'nosuchendpoint', eventId: 'evt-1' }));
    assert.equal(unknown.status, 404);
    const entries = (await queryAudit(stack.store.database, { user: 'oid-bad-input', pageSize: 10 })).items;
    assert.deepEqual(
      entries.map((e) => [e.action, e.outcome, e.status, e.eventId]).sort(),
      [
        ['handoff', 'failed', 400, 'evt-handoff-2'],
        ['resubmit', 'failed', 404, 'evt-1'],
      ],
    );
    assert.match(entries.find((e) => e.action === 'handoff')!.reason ?? '', /^bad request: invalid body: errorText/);
  });

  test('input refused after authorizeBeforeBody is audited on every route that checks before the body', async () => {
    // docs/security.md: input refused after authorization is audited. Only `authorize` set that obligation, so a
    // bulk skip with a bad body was answered 400 and left nothing, while the single-event skip audited the same body.
    const actor: Principal = { kind: 'user', id: 'oid-bad-bulk-input', name: 'bad-bulk-input@test', roles: ['Owner'], groups: [] };
    const skip = await import('../../app/api/event/skip/route.ts');
    const resubmit = await import('../../app/api/event/resubmit/route.ts');
    const operations = await import('../../app/api/operations/route.ts');
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    const subscription = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/actions/route.ts');
    const pause = await import('../../app/api/operations/[operationId]/pause/route.ts');
    const send = (body: unknown) => post(actor, JSON.stringify(body));
    const NO_JOB = '00000000-0000-4000-8000-00000000b0d7';
    const cases: [string, () => Promise<Response>, [string, number, string | null], RegExp][] = [
      ['bulk skip', () => skip.POST(send({ endpointId: 'billingendpoint', eventIds: 'x' })), ['skip', 400, null], /eventIds/],
      ['bulk resubmit', () => resubmit.POST(send({ endpointId: 'billingendpoint', eventIds: 'x' })), ['resubmit', 400, null], /eventIds/],
      // A job's refusal is named by the kind its body asked for (a skip job's were audited as `resubmit`), and by
      // either kind when the body names none.
      ['job, bad body', () => operations.POST(send({ kind: 'purge', selection: {} })), ['resubmit|skip', 400, null], /kind/],
      ['job, not JSON', () => operations.POST(post(actor, '{"kind": "skip"')), ['resubmit|skip', 400, null], /not valid JSON/],
      ['skip job, bad selection', () => operations.POST(send({ kind: 'skip', selection: { endpointId: 'crmendpoint', status: 'x' } })), ['skip', 400, null], /status/],
      ['resubmit job, bad selection', () => operations.POST(send({ kind: 'resubmit', selection: { endpointId: 'crmendpoint', status: 'x' } })), ['resubmit', 400, null], /status/],
      ['job, nothing selected', () => operations.POST(send({ kind: 'skip', selection: { endpointId: 'crmendpoint', errorText: 'no such text' } })), ['skip', 400, null], /matches no events/],
      ['job, unknown endpoint', () => operations.POST(send({ kind: 'skip', selection: { endpointId: 'nosuchendpoint', errorText: 'x' } })), ['skip', 404, null], /nosuchendpoint/],
      ['reconcile', () => reconcile.POST(send({ targets: 'x' })), ['reconcile', 400, null], /targets/],
      [
        'subscription action',
        () => subscription.POST(send({ action: 'explode' }), params({ topic: 'billingendpoint', subscription: 'billingendpoint' })),
        ['subscription.*', 400, 'billingendpoint/billingendpoint'],
        /action/,
      ],
      ['job control, unknown job', () => pause.POST(send({}), params({ operationId: NO_JOB })), ['operation.pause', 404, `operation/${NO_JOB}`], /is not known/],
    ];
    const from = new Date().toISOString();
    for (const [name, call, [action, status, target], reason] of cases) {
      const res = await call();
      assert.equal(res.status, status, `${name}: ${await res.clone().text()}`);
      const [entry] = (await queryAudit(stack.store.database, { user: actor.id, from, pageSize: 1 })).items;
      assert.deepEqual(entry && [entry.action, entry.status, entry.target, entry.outcome], [action, status, target, 'failed'], `${name}: ${JSON.stringify(entry)}`);
      assert.match(entry!.reason ?? '', reason, name);
    }
    assert.equal((await queryAudit(stack.store.database, { user: actor.id, from, pageSize: 50 })).items.length, cases.length, 'one entry per refused call');
  });

  test('a bulk command over several endpoints counts once against the rate limit (job, its cancel, reconcile)', async () => {
    // docs/security.md: "A bulk command counts once". Each route authorized every endpoint it touches with a call
    // that took a token, so an operator's own job over several endpoints could be refused 429 by their own limit.
    const operations = await import('../../app/api/operations/route.ts');
    const cancel = await import('../../app/api/operations/[operationId]/cancel/route.ts');
    const reconcile = await import('../../app/api/operations/reconcile/route.ts');
    // One failure cause on two endpoints: a failure group whose job touches both.
    const base = Date.now() - 30_000;
    const cause = { errorText: 'rate-limit probe: upstream refused', errorType: 'RateLimitProbeException' };
    await seedEvent(stack.store, base, { endpointId: 'billingendpoint', eventId: 'evt-rl-billing', sessionId: 'RL-1', eventTypeId: 'OrderPlaced', payload: { orderId: 'RL-1' } }, MessageType.ErrorResponse, cause);
    await seedEvent(stack.store, base, { endpointId: 'crmendpoint', eventId: 'evt-rl-crm', sessionId: 'RL-2', eventTypeId: 'CustomerRegistered', payload: { customerId: 'RL-2' } }, MessageType.ErrorResponse, cause);
    const groupId = (await stack.store.getStatusRow('crmendpoint', 'evt-rl-crm', 'RL-2'))?.fingerprint;
    assert.equal(typeof groupId, 'string');
    assert.equal((await stack.store.getStatusRow('billingendpoint', 'evt-rl-billing', 'RL-1'))?.fingerprint, groupId, 'one group on both endpoints');

    const saved = { burst: process.env.NIMBUS_RATE_LIMIT_BURST, rate: process.env.NIMBUS_RATE_LIMIT_PER_MINUTE };
    // One call at once, one a minute: nothing refills during the test however slow the machine.
    process.env.NIMBUS_RATE_LIMIT_BURST = '1';
    process.env.NIMBUS_RATE_LIMIT_PER_MINUTE = '1';
    try {
      const operator = (id: string): Principal => ({ kind: 'user', id: `oid-bulk-${id}`, name: `bulk-${id}@test`, roles: ['Operator'], groups: [] });
      const created = await operations.POST(post(operator('job'), JSON.stringify({ kind: 'skip', selection: { groupId }, hold: true })));
      assert.equal(created.status, 202, await created.clone().text());
      const { operationId } = (await created.json()) as { operationId: string };
      // Another principal (a bucket of its own): an Owner, since only the preparer or an Owner may cancel a prepared job.
      const canceller: Principal = { ...operator('cancel'), roles: ['Owner'] };
      const cancelled = await cancel.POST(post(canceller), params({ operationId }));
      assert.equal(cancelled.status, 200, await cancelled.clone().text());
      const reconciler = operator('reconcile');
      const targets = ['billingendpoint', 'crmendpoint'].map((endpointId) => ({ endpointId, eventId: 'evt-rl-none', sessionId: 'RL-0', rowMessageId: 'm-none' }));
      const body = JSON.stringify({ targets });
      const repaired = await reconcile.POST(post(reconciler, body));
      assert.equal(repaired.status, 200, await repaired.clone().text());
      // Once, not never: the next change of the same caller is over the limit.
      const again = await reconcile.POST(post(reconciler, body));
      assert.equal(again.status, 429);
      assert.match(((await again.json()) as { detail: string }).detail, /try again in \d+ s/);
    } finally {
      for (const [k, v] of [['NIMBUS_RATE_LIMIT_BURST', saved.burst], ['NIMBUS_RATE_LIMIT_PER_MINUTE', saved.rate]] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  test("a job's pause, resume or cancel refused before the job is read is audited as that control, not as a read", async () => {
    // Each control first authorized `read` (to load the job under the caller's read scope): a POST from another site,
    // a caller without a role or without a session was refused there, and the audit log said `read` - not that
    // somebody tried to pause, resume or cancel a bulk job.
    const operations = await import('../../app/api/operations/route.ts');
    const controls = {
      pause: await import('../../app/api/operations/[operationId]/pause/route.ts'),
      resume: await import('../../app/api/operations/[operationId]/resume/route.ts'),
      cancel: await import('../../app/api/operations/[operationId]/cancel/route.ts'),
    };
    const base = Date.now() - 30_000;
    const cause = { errorText: 'control audit probe: upstream refused', errorType: 'ControlAuditProbeException' };
    await seedEvent(stack.store, base, { endpointId: 'billingendpoint', eventId: 'evt-ctl-audit', sessionId: 'CTL-1', eventTypeId: 'OrderPlaced', payload: { orderId: 'CTL-1' } }, MessageType.ErrorResponse, cause);
    const groupId = (await stack.store.getStatusRow('billingendpoint', 'evt-ctl-audit', 'CTL-1'))?.fingerprint;
    assert.equal(typeof groupId, 'string');
    const operator: Principal = { kind: 'user', id: 'oid-ctl-operator', name: 'ctl-operator@test', roles: ['Operator'], groups: [] };
    const created = await operations.POST(post(operator, JSON.stringify({ kind: 'skip', selection: { groupId }, hold: true })));
    assert.equal(created.status, 202, await created.clone().text());
    const { operationId } = (await created.json()) as { operationId: string };
    const target = params({ operationId });
    const crossSite = (who: Principal) =>
      new Request('http://127.0.0.1:3000/api/x', {
        method: 'POST',
        headers: { host: '127.0.0.1:3000', cookie: cookieOf(who), 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      });
    const reader: Principal = { kind: 'user', id: 'oid-ctl-reader', name: 'ctl-reader@test', roles: ['Reader'], groups: [] };
    const roleless: Principal = { kind: 'user', id: 'oid-ctl-roleless', name: 'ctl-roleless@test', roles: [], groups: [] };
    for (const [control, route] of Object.entries(controls)) {
      const label = `operation.${control}`;
      const refusals: Array<[string, string, Request, number]> = [
        ['a page on another site (the Operator signed in)', 'oid-ctl-operator', crossSite(operator), 403],
        ['a Reader', 'oid-ctl-reader', post(reader), 403],
        ['a signed-in caller without a role', 'oid-ctl-roleless', post(roleless), 403],
        ['no session', 'unauthenticated', post(null), 401],
      ];
      for (const [who, user, request, status] of refusals) {
        const denied = async () => (await queryAudit(stack.store.database, { user, outcome: 'denied', pageSize: 50 })).items;
        const before = new Set((await denied()).map((e) => e.id));
        const res = await route.POST(request, target);
        assert.equal(res.status, status, `${control} by ${who}: ${await res.clone().text()}`);
        const entries = (await denied()).filter((e) => !before.has(e.id));
        assert.deepEqual(
          entries.map((e) => [e.action, e.target, e.status]),
          [[label, `operation/${operationId}`, status]],
          `${control} by ${who}: audited once, as ${label}`,
        );
      }
    }
    // From the console's own page, the Operator still controls the job.
    assert.equal((await controls.cancel.POST(post(operator), target)).status, 200);
  });

  test('the replay preview counts against the rate limit like the replay', async () => {
    const preview = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
    const saved = process.env.NIMBUS_RATE_LIMIT_BURST;
    const savedRate = process.env.NIMBUS_RATE_LIMIT_PER_MINUTE;
    process.env.NIMBUS_RATE_LIMIT_BURST = '2';
    // One call a minute refills the bucket: at the default 120 a minute, a loaded CI machine that took over 500 ms
    // for the three previews (CI26: 794 ms) had a token back by the third, and it was answered 200.
    process.env.NIMBUS_RATE_LIMIT_PER_MINUTE = '1';
    try {
      const scanner: Principal = { kind: 'user', id: 'oid-scanner', name: 'scanner@test', roles: ['Reader'], groups: [] };
      const sub = params({ topic: 'billingendpoint', subscription: 'billingendpoint' });
      const call = () => preview.POST(post(scanner, JSON.stringify({ all: true })), sub);
      const first = [(await call()).status, (await call()).status];
      assert.deepEqual(first, [200, 200]);
      const limited = await call();
      assert.equal(limited.status, 429);
      assert.match(((await limited.json()) as { detail: string }).detail, /try again in \d+ s/);
    } finally {
      if (saved === undefined) delete process.env.NIMBUS_RATE_LIMIT_BURST;
      else process.env.NIMBUS_RATE_LIMIT_BURST = saved;
      if (savedRate === undefined) delete process.env.NIMBUS_RATE_LIMIT_PER_MINUTE;
      else process.env.NIMBUS_RATE_LIMIT_PER_MINUTE = savedRate;
    }
  });
});
