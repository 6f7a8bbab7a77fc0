// The alert reads follow the caller's read scope (server/alerts/readScope.ts), through the route handlers with
// sealed session cookies on the embedded stack: a Reader of billingendpoint gets no alert of a rule on
// crmendpoint, and a site-wide rule's alert or last detail that names crmendpoint's event or session (or was stored
// before the endpoint it names was recorded, and does not say it in the evaluator's words) without its text; a
// site-wide Reader gets everything whole.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useConsoleStack } from '../testing/consoleStack.ts';
import { oidcTestEnv } from '../testing/oidcEnv.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import type { Principal } from '../auth/principal.ts';
import { ruleInputSchema, type AlertDoc, type RuleStateDoc } from './model.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const SECRET = 'alert-scope-session-secret-0123456789-abcdef';
const AUTH_ENV = oidcTestEnv(SECRET, { roles: { Reader: 'Reader' }, groups: { 'billing-readers': 'Reader:billingendpoint' } });
const siteReader: Principal = { kind: 'user', id: 'oid-sr', name: 'sr@test', roles: ['Reader'], groups: [] };
const billingReader: Principal = { kind: 'user', id: 'oid-br', name: 'br@test', roles: [], groups: ['billing-readers'] };


function get(p: Principal, path: string): Request {
  return new Request(`http://127.0.0.1:3000${path}`, {
    headers: { host: '127.0.0.1:3000', cookie: `${SESSION_COOKIE}=${sealSession(p, { secret: SECRET, maxAgeSeconds: 600 })}` },
  });
}

const t0 = Date.parse('2026-12-03T10:00:00.000Z');
/** An alert fired `n` minutes after t0 (so the history's order is n descending). */
function alert(id: string, n: number, endpointId: string | null, firedFor: string | null | undefined, summary: string, link: string, ruleType?: AlertDoc['ruleType']): AlertDoc {
  return {
    id,
    kind: 'alert',
    ruleId: `rule-${id}`,
    ruleName: id,
    ruleType: ruleType ?? (endpointId ? 'failureRate' : 'blockedSession'),
    endpointId,
    firedAt: new Date(t0 + n * 60_000).toISOString(),
    recoveredAt: null,
    value: n,
    threshold: null,
    summary,
    link,
    ...(firedFor === undefined ? {} : { firedFor }),
    deliveries: [],
  };
}

async function storeAlerts(): Promise<void> {
  const { getContext } = await import('../context.ts');
  const { alertStoreOf } = await import('./routes.ts');
  const store = alertStoreOf(await getContext());
  for (const a of [
    alert('crm-rule-old', 1, 'crmendpoint', 'crmendpoint', 'crmendpoint: 9 failures in a minute, session s-crm-secret-1', '/endpoints/crmendpoint'),
    // Stored before firedFor was recorded: what it names is not known.
    alert('site-legacy', 2, null, undefined, '1 pending handoff(s); first: crmendpoint event evt-crm-secret-2', '/endpoints/crmendpoint/events/evt-crm-secret-2'),
    alert('site-crm', 3, null, 'crmendpoint', '1 session(s) blocked; oldest: crmendpoint session s-crm-secret-3', '/endpoints/crmendpoint/events/evt-crm-secret-3'),
    alert('site-billing', 4, null, 'billingendpoint', '1 session(s) blocked; oldest: billingendpoint session s-billing-4', '/endpoints/billingendpoint/events/evt-billing-4'),
    alert('site-none', 5, null, null, '12 dead letters in the namespace (threshold 10)', '/topology/subscriptions'),
    alert('billing-rule', 6, 'billingendpoint', 'billingendpoint', 'billingendpoint: 7 failures in a minute', '/endpoints/billingendpoint'),
    alert('crm-rule-new', 7, 'crmendpoint', 'crmendpoint', 'crmendpoint: 8 failures in a minute, session s-crm-secret-7', '/endpoints/crmendpoint'),
    // Stored before firedFor was recorded, in the evaluator's own words (the oldest three): the endpoint is read
    // from the summary and the link when both name the same one, and a rule type that names no records names none.
    alert('legacy-billing-handoff', 0, null, undefined, '1 pending handoff(s) past their expected-by; first: billingendpoint event evt-billing-0 expected by 2026-12-03T09:00:00.000Z', '/endpoints/billingendpoint/events/evt-billing-0', 'pendingHandoff'),
    alert('legacy-namespace-dead-letters', -1, null, undefined, '12 dead letters in the namespace (threshold 10)', '/topology/subscriptions', 'deadLetterBacklog'),
    alert('legacy-disagreeing', -2, null, undefined, 'new failure group on crmendpoint: crm-secret-error (1 event)', '/endpoints/billingendpoint?status=Failed', 'newFailureGroup'),
  ])
    await store.putAlert(a);

  const rules: Array<[string, string | null, Pick<RuleStateDoc, 'lastStatus' | 'lastDetail' | 'lastDetailFor'>]> = [
    ['r-crm', 'crmendpoint', { lastStatus: 'firing', lastDetail: 'crmendpoint session s-crm-secret-r1', lastDetailFor: 'crmendpoint' }],
    ['r-site-crm', null, { lastStatus: 'firing', lastDetail: 'oldest: crmendpoint session s-crm-secret-r2', lastDetailFor: 'crmendpoint' }],
    ['r-site-legacy', null, { lastStatus: 'firing', lastDetail: 'first: crmendpoint event evt-crm-secret-r3' }],
    ['r-site-billing', null, { lastStatus: 'firing', lastDetail: 'oldest: billingendpoint session s-billing-r4', lastDetailFor: 'billingendpoint' }],
    ['r-site-ok', null, { lastStatus: 'ok', lastDetail: 'value 0', lastDetailFor: null }],
  ];
  for (const [name, endpointId, state] of rules) {
    const rule = await store.saveRule(ruleInputSchema.parse({ name, type: endpointId ? 'pendingHandoff' : 'blockedSession', endpointId, durationSeconds: endpointId ? null : 600, enabled: false }), 'test');
    const firing = state.lastStatus === 'firing';
    const doc: RuleStateDoc = { id: rule.id, kind: 'state', ruleId: rule.id, firing, alertId: null, lastFiredAt: firing ? new Date(t0).toISOString() : null, suppressed: 0, evaluatedAt: new Date(t0).toISOString(), ...state };
    assert.ok(await store.casState(doc, undefined));
  }
}
useConsoleStack({ database: 'alertscope', env: AUTH_ENV, prepare: storeAlerts });

type HistoryAlert = { id: string; summary: string | null; link: string | null; firedAt: string; value: number };
async function history(p: Principal, limit = 200): Promise<{ text: string; alerts: HistoryAlert[] }> {
  const mod = await import('../../app/api/alerts/history/route.ts');
  const res = await mod.GET(get(p, `/api/alerts/history?limit=${limit}`));
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return { text, alerts: (JSON.parse(text) as { alerts: HistoryAlert[] }).alerts };
}

type RuleState = { name: string; state: { firing: boolean; lastStatus?: string; lastDetail?: string } | null };
async function rules(p: Principal): Promise<{ text: string; byName: Map<string, RuleState> }> {
  const mod = await import('../../app/api/admin/alerts/rules/route.ts');
  const res = await mod.GET(get(p, '/api/admin/alerts/rules'));
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return { text, byName: new Map((JSON.parse(text) as { rules: RuleState[] }).rules.map((r) => [r.name, r])) };
}

describe('alert reads within the caller’s read scope', () => {
  test('history: a billingendpoint Reader gets no crmendpoint rule’s alert and no site-wide alert’s crmendpoint text', async () => {
    const { text, alerts } = await history(billingReader);
    assert.deepEqual(
      alerts.map((a) => a.id),
      ['billing-rule', 'site-none', 'site-billing', 'site-crm', 'site-legacy', 'legacy-billing-handoff', 'legacy-namespace-dead-letters', 'legacy-disagreeing'],
    );
    assert.doesNotMatch(text, /crm-secret/, 'no event or session id of crmendpoint, in any field');
    const byId = new Map(alerts.map((a) => [a.id, a]));
    // That the site-wide rule fired, and when, stays: not what it names. An old alert whose summary and link name
    // different endpoints is not shown on a guess.
    for (const id of ['site-crm', 'site-legacy', 'legacy-disagreeing']) {
      const a = byId.get(id)!;
      assert.equal(a.summary, null, id);
      assert.equal(a.link, null, id);
      assert.ok(a.firedAt && typeof a.value === 'number', id);
    }
    assert.equal(byId.get('site-billing')!.link, '/endpoints/billingendpoint/events/evt-billing-4');
    assert.match(byId.get('site-none')!.summary!, /12 dead letters in the namespace/);
    assert.match(byId.get('billing-rule')!.summary!, /billingendpoint: 7 failures/);
    // Stored before firedFor, about billingendpoint or about no endpoint's records: whole (before, withheld).
    assert.equal(byId.get('legacy-billing-handoff')!.link, '/endpoints/billingendpoint/events/evt-billing-0');
    assert.match(byId.get('legacy-billing-handoff')!.summary!, /first: billingendpoint event evt-billing-0/);
    assert.match(byId.get('legacy-namespace-dead-letters')!.summary!, /12 dead letters in the namespace/);
  });

  test('history: the limit counts what the caller gets (filtered in the query)', async () => {
    // The newest alert is crmendpoint's: left out before the limit, not after it.
    assert.deepEqual((await history(billingReader, 1)).alerts.map((a) => a.id), ['billing-rule']);
  });

  test('history: a site-wide Reader gets every alert whole', async () => {
    const { alerts } = await history(siteReader);
    assert.deepEqual(
      alerts.map((a) => a.id),
      ['crm-rule-new', 'billing-rule', 'site-none', 'site-billing', 'site-crm', 'site-legacy', 'crm-rule-old', 'legacy-billing-handoff', 'legacy-namespace-dead-letters', 'legacy-disagreeing'],
    );
    const siteCrm = alerts.find((a) => a.id === 'site-crm')!;
    assert.match(siteCrm.summary!, /s-crm-secret-3/);
    assert.equal(siteCrm.link, '/endpoints/crmendpoint/events/evt-crm-secret-3');
    assert.match(alerts.find((a) => a.id === 'site-legacy')!.summary!, /evt-crm-secret-2/);
  });

  test('rules: every rule and whether it fires, the last detail only where the caller may read what it names', async () => {
    const billing = await rules(billingReader);
    assert.deepEqual([...billing.byName.keys()].sort(), ['r-crm', 'r-site-billing', 'r-site-crm', 'r-site-legacy', 'r-site-ok']);
    assert.doesNotMatch(billing.text, /crm-secret/, 'no event or session id of crmendpoint, in any field');
    for (const name of ['r-crm', 'r-site-crm', 'r-site-legacy']) {
      const s = billing.byName.get(name)!.state!;
      assert.equal(s.firing, true, name);
      assert.equal(s.lastDetail, undefined, name);
    }
    assert.equal(billing.byName.get('r-site-billing')!.state!.lastDetail, 'oldest: billingendpoint session s-billing-r4');
    assert.equal(billing.byName.get('r-site-ok')!.state!.lastDetail, 'value 0');

    const site = await rules(siteReader);
    assert.equal(site.byName.get('r-crm')!.state!.lastDetail, 'crmendpoint session s-crm-secret-r1');
    assert.equal(site.byName.get('r-site-crm')!.state!.lastDetail, 'oldest: crmendpoint session s-crm-secret-r2');
    assert.equal(site.byName.get('r-site-legacy')!.state!.lastDetail, 'first: crmendpoint event evt-crm-secret-r3');
  });
});
