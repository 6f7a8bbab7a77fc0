// Who may read dead letters (their bodies and application properties), on the embedded stack with real session
// cookies, the routes called as Next calls them: a Reader of one endpoint reads that endpoint's dead letters and
// is refused (403, audited) another endpoint's and a platform topic's, whose dead letters hold every endpoint's
// messages; a site-wide Reader reads them all; nobody signed in gets 401. The replay preview is held to the same rule.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Prop, Topic } from '@nimbus/sdk/contract';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { queryAudit } from '../audit/auditLog.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

const SECRET = 'deadletter-authz-session-secret-0123456789';
const AUTH_ENV = oidcTestEnv(SECRET, { roles: { Reader: 'Reader' }, groups: { 'crm-readers': 'Reader:crmendpoint', 'billing-ops': 'Operator:billingendpoint' } });

type Caller = 'anonymous' | 'crmReader' | 'billingOperator' | 'siteReader';
const PRINCIPALS: Record<Exclude<Caller, 'anonymous'>, Principal> = {
  crmReader: { kind: 'user', id: 'oid-crm-reader', name: 'crm-reader@test', roles: [], groups: ['crm-readers'] },
  billingOperator: { kind: 'user', id: 'oid-billing-op', name: 'billing-operator@test', roles: [], groups: ['billing-ops'] },
  siteReader: { kind: 'user', id: 'oid-site-reader', name: 'site-reader@test', roles: ['Reader'], groups: [] },
};

const params = <P>(p: P) => ({ params: Promise.resolve(p) });

function request(caller: Caller, method: string, body?: unknown): Request {
  const h: Record<string, string> = { 'content-type': 'application/json', host: '127.0.0.1:3000' };
  if (caller !== 'anonymous') h.cookie = `${SESSION_COOKIE}=${sealSession(PRINCIPALS[caller], { secret: SECRET, maxAgeSeconds: 600 })}`;
  return new Request('http://127.0.0.1:3000/api/x', { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** Dead-letters one message with a recognisable body on a session subscription; answers that body. */
async function deadLetter(topic: string, subscription: string, to: string): Promise<string> {
  const sessionId = `s-${randomUUID()}`;
  const marker = `secret-of-${topic}-${randomUUID()}`;
  const sender = stack.serviceBus.client.createSender(topic);
  await sender.sendMessages({ messageId: randomUUID(), sessionId, body: Buffer.from(JSON.stringify({ marker })), applicationProperties: { [Prop.To]: to } });
  await sender.close();
  const receiver = await stack.serviceBus.client.acceptSession(topic, subscription, sessionId);
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  assert.ok(m, `a message reached ${topic}/${subscription}`);
  await receiver.deadLetterMessage(m, { deadLetterReason: 'TestReason', deadLetterErrorDescription: 'for the authorization test' });
  await receiver.close();
  return marker;
}

const markers: Record<string, string> = {};

const stack = useConsoleStack({
  database: 'dlauthz',
  env: AUTH_ENV,
  prepare: async () => {
    markers.billingendpoint = await deadLetter('billingendpoint', 'billingendpoint', 'billingendpoint');
    markers.crmendpoint = await deadLetter('crmendpoint', 'crmendpoint', 'crmendpoint');
    markers[Topic.Resolver] = await deadLetter(Topic.Resolver, Topic.Resolver, 'Resolver');
  },
});

describe('dead-letter read authorization', () => {
  test('the list and the preview need read on the topic’s endpoint, or a site-wide role for a platform topic', async () => {
    const list = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/deadletters/route.ts');
    const preview = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/replay/preview/route.ts');
    const topics = ['billingendpoint', 'crmendpoint', Topic.Resolver];
    const expected: Record<Caller, Record<string, number>> = {
      anonymous: { billingendpoint: 401, crmendpoint: 401, [Topic.Resolver]: 401 },
      crmReader: { billingendpoint: 403, crmendpoint: 200, [Topic.Resolver]: 403 },
      // An Operator of one endpoint is no more site-wide than a Reader of one.
      billingOperator: { billingendpoint: 200, crmendpoint: 403, [Topic.Resolver]: 403 },
      siteReader: { billingendpoint: 200, crmendpoint: 200, [Topic.Resolver]: 200 },
    };
    const problems: string[] = [];
    for (const caller of Object.keys(expected) as Caller[]) {
      for (const topic of topics) {
        const p = params({ topic, subscription: topic });
        const want = expected[caller][topic]!;
        const startedAt = new Date(Date.now() - 1000).toISOString();
        const res = await list.GET(request(caller, 'GET'), p);
        const text = await res.text();
        if (res.status !== want) problems.push(`list ${topic} by ${caller}: ${res.status} ${text.slice(0, 200)} (expected ${want})`);
        if (want === 200 && !text.includes(markers[topic]!)) problems.push(`list ${topic} by ${caller}: the dead letter's body is missing`);
        if (want !== 200 && text.includes(markers[topic]!)) problems.push(`list ${topic} by ${caller}: a refusal carries the body`);
        if (want !== 200 && typeof (JSON.parse(text) as { detail?: unknown }).detail !== 'string') problems.push(`list ${topic} by ${caller}: no { error, detail }`);
        if (want === 403) {
          const audit = await queryAudit(stack.store.database, { user: PRINCIPALS[caller as Exclude<Caller, 'anonymous'>].name, action: 'read', from: startedAt, pageSize: 5 });
          const entry = audit.items[0];
          if (!entry || entry.outcome !== 'denied' || entry.status !== 403 || entry.target !== `${topic}/${topic}`)
            problems.push(`list ${topic} by ${caller}: refusal not audited (${JSON.stringify(entry ?? null)})`);
        }
        const pv = await preview.POST(request(caller, 'POST', { all: true }), p);
        const pvText = await pv.text();
        if (pv.status !== want) problems.push(`preview ${topic} by ${caller}: ${pv.status} ${pvText.slice(0, 200)} (expected ${want})`);
        if (want === 200 && (JSON.parse(pvText) as { count?: number }).count !== 1) problems.push(`preview ${topic} by ${caller}: ${pvText.slice(0, 200)}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test('a platform-topic refusal says why', async () => {
    const list = await import('../../app/api/topology/subscriptions/[topic]/[subscription]/deadletters/route.ts');
    const res = await list.GET(request('crmReader', 'GET'), params({ topic: Topic.Manager, subscription: 'crmendpoint' }));
    assert.equal(res.status, 403);
    assert.match(((await res.json()) as { detail: string }).detail, /platform topic Manager needs a role held site-wide/);
  });
});
