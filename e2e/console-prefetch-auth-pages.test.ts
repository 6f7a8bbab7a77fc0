// The dead-letter browser, the alert pages and the audit log put their first data into the HTML through the same
// authorization and read scope as their API routes (server/reads.ts): a Reader gets the rows, a caller without a
// role gets none, and an Operator of one endpoint gets neither a platform topic's dead letters, nor another
// endpoint's audit entries, nor what an alert names of another endpoint - not in the markup, not in the hydration
// data. The built console with OIDC sign-in and
// sealed session cookies, over HTTP, as e2e/console-prefetch-auth.test.ts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Topic } from '@nimbus/sdk/contract';
import { AlertStore } from '../server/alerts/alertStore.ts';
import { writeAudit } from '../server/audit/auditLog.ts';
import { pageAs as fetchPageAs, PREFETCH_ROLE_MAP, type PrefetchCaller } from '../server/testing/prefetchCallers.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import type { ConsoleTestStack } from '../server/testing/stack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'prefetch-auth-pages-secret-0123456789-abcdef';

let ui: SeededConsole | undefined;

const pageAs = (caller: PrefetchCaller, path: string): Promise<string> => fetchPageAs(ui!, caller, path);

const DEAD_LETTER_ID = `prefetch-dl-${randomUUID()}`;
const AUDIT_TARGET = `prefetch-audit-${randomUUID()}`;
const NAMED_EVENT = `prefetch-evt-${randomUUID()}`;

/** A dead letter, an alert rule and alert, and an audit entry: the first data of the three pages. */
async function seedPages(stack: ConsoleTestStack): Promise<void> {
  // One dead letter on the platform topic Resolver (bodies of every endpoint: site-wide roles only).
  const sessionId = `s-${randomUUID()}`;
  const sender = stack.serviceBus.client.createSender(Topic.Resolver);
  await sender.sendMessages({ messageId: DEAD_LETTER_ID, sessionId, body: Buffer.from('{}'), applicationProperties: { To: 'billingendpoint' } });
  await sender.close();
  const receiver = await stack.serviceBus.client.acceptSession(Topic.Resolver, Topic.Resolver, sessionId);
  const [m] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 5000 });
  assert.ok(m, 'received the message to dead-letter');
  await receiver.deadLetterMessage(m, { deadLetterReason: 'PrefetchTest', deadLetterErrorDescription: 'for the prefetch test' });
  await receiver.close();
  // An alert rule, an alert, and an audit entry of billingendpoint.
  const alerts = new AlertStore(stack.store.database);
  await alerts.saveRule({ name: 'prefetch-rule', type: 'deadLetterBacklog', endpointId: null, threshold: 1000, durationSeconds: null, cooldownSeconds: 900, channelIds: [], enabled: false }, 'test');
  await alerts.putAlert({
    id: 'prefetch-alert',
    kind: 'alert',
    ruleId: 'r',
    ruleName: 'prefetch-rule',
    ruleType: 'deadLetterBacklog',
    endpointId: null,
    firedAt: new Date().toISOString(),
    recoveredAt: null,
    value: 2,
    threshold: 1,
    summary: 'prefetch alert',
    link: '/',
    deliveries: [],
  });
  // A site-wide rule that fired for billingendpoint, its alert and last detail naming one of its events: the text
  // only for callers who may read billingendpoint (server/alerts/readScope.ts).
  const named = await alerts.saveRule({ name: 'prefetch-named-rule', type: 'pendingHandoff', endpointId: null, threshold: null, durationSeconds: null, cooldownSeconds: 900, channelIds: [], enabled: false }, 'test');
  const at = new Date().toISOString();
  const summary = `1 pending handoff(s) past their expected-by; first: billingendpoint event ${NAMED_EVENT}`;
  // Not firing now: the rule is disabled, and the console's evaluator closes what a disabled rule left firing
  // (server/alerts/alertStore.ts closeFiring) - its state would be gone before the pages are read. Its last fire's
  // alert and its last detail, naming the event, stay.
  await alerts.casState({ id: named.id, kind: 'state', ruleId: named.id, firing: false, alertId: 'prefetch-alert-named', lastFiredAt: at, suppressed: 0, evaluatedAt: at, lastStatus: 'ok', lastDetail: summary, lastDetailFor: 'billingendpoint' }, undefined);
  await alerts.putAlert({
    id: 'prefetch-alert-named',
    kind: 'alert',
    ruleId: named.id,
    ruleName: 'prefetch-named-rule',
    ruleType: 'pendingHandoff',
    endpointId: null,
    firedAt: at,
    recoveredAt: null,
    value: 1,
    threshold: null,
    summary,
    link: `/endpoints/billingendpoint/events/${NAMED_EVENT}`,
    firedFor: 'billingendpoint',
    deliveries: [],
  });
  await writeAudit(stack.store.database, {
    actorKind: 'user',
    actorId: 'oid-x',
    actorName: 'x@test',
    roles: 'Owner',
    action: 'event.resubmit',
    endpointId: 'billingendpoint',
    eventId: null,
    target: AUDIT_TARGET,
    outcome: 'succeeded',
    status: 200,
    reason: null,
    details: null,
  });
}

before(async () => {
  ui = await startSeededConsole({
    demoData: false,
    browser: false,
    auth: { sessionSecret: SECRET, roleMap: PREFETCH_ROLE_MAP },
    prepare: ({ stack }) => seedPages(stack),
  });
});

after(() => ui?.close());

describe('prefetched data of the dead-letter, alert and audit pages follows the caller’s rights', () => {
  test('dead letters of a platform topic: for a site-wide Reader, not for an endpoint Operator nor a caller without a role', async () => {
    const path = '/topology/subscriptions/Resolver/Resolver';
    assert.match(await pageAs('siteReader', path), new RegExp(`data-dead-letter="${DEAD_LETTER_ID}"`));
    for (const caller of ['crmOperator', 'roleless'] as const) assert.doesNotMatch(await pageAs(caller, path), new RegExp(DEAD_LETTER_ID), caller);
  });

  test('alert rules and history: for a Reader, not for a caller without a role', async () => {
    assert.match(await pageAs('siteReader', '/admin/alerts'), /data-rule="prefetch-rule"/);
    assert.match(await pageAs('siteReader', '/alerts'), /data-alert="prefetch-alert"/);
    assert.doesNotMatch(await pageAs('roleless', '/admin/alerts'), /prefetch-rule/);
    assert.doesNotMatch(await pageAs('roleless', '/alerts'), /prefetch-alert/);
  });

  test('a site-wide rule’s alert naming billingendpoint’s event: whole for a Reader, without its text for crmendpoint’s Operator', async () => {
    const crmHistory = await pageAs('crmOperator', '/alerts');
    assert.match(crmHistory, /data-alert="prefetch-alert-named"/, 'that it fired is shown');
    assert.match(crmHistory, /data-testid="alert-withheld"/);
    assert.doesNotMatch(crmHistory, new RegExp(NAMED_EVENT), 'not the event it names, in the markup or the hydration data');
    const crmRules = await pageAs('crmOperator', '/admin/alerts');
    assert.match(crmRules, /data-rule="prefetch-named-rule"/);
    assert.doesNotMatch(crmRules, new RegExp(NAMED_EVENT));
    assert.match(await pageAs('siteReader', '/alerts'), new RegExp(`billingendpoint/events/${NAMED_EVENT}`));
    assert.match(await pageAs('siteReader', '/admin/alerts'), new RegExp(NAMED_EVENT));
  });

  test('the audit log: billingendpoint’s entry for a Reader, not for crmendpoint’s Operator nor a caller without a role', async () => {
    assert.match(await pageAs('siteReader', '/audit'), new RegExp(AUDIT_TARGET));
    for (const caller of ['crmOperator', 'roleless'] as const) assert.doesNotMatch(await pageAs(caller, '/audit'), new RegExp(AUDIT_TARGET), caller);
  });
});
