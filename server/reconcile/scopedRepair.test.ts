// Operations → Reconcile in Chromium (playwright-core) on the built console with sign-in on, the embedded stack
// and real clients. One event was published to two subscribers, so billingendpoint and erpendpoint each hold a
// stale Pending row under the same eventId.
// - An Operator of billingendpoint only (and Reader elsewhere) gets the checkbox and "Repair selected" for the
//   billing row, none for the erp row, and repairs it: the server allows an endpoint's Operator that endpoint's
//   rows (app/api/operations/reconcile/route.ts, authorizeEach), and the page offers exactly that.
// - A site-wide Operator selects both rows; when both moved after the preview, the result lists both as unchanged,
//   each line naming its endpoint (keyed by endpoint + eventId, not by the shared eventId).
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { CosmosClient } from '@azure/cosmos';
import type { Page } from 'playwright-core';
import { statusRowId } from '../../lib/store/index.ts';
import type { Principal } from '../auth/principal.ts';
import { CONSOLE_DIR } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const DATABASE = 'reconcilescoped';
const BILLING = 'billingendpoint';
const ERP = 'erpendpoint';

const user = (name: string, roles: string[], groups: string[]): Principal => ({ kind: 'user', id: `oid-${name}`, name: `${name}@test`, roles, groups });
const billingOperator = user('billing-operator', ['Reader'], ['billing-ops']);
const siteOperator = user('site-operator', ['Operator'], []);

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({
    database: DATABASE,
    dir: DIR,
    demoData: false,
    auth: {
      sessionSecret: 'reconcile-scoped-test-session-secret-0123456789',
      roleMap: { roles: { Reader: 'Reader', Operator: 'Operator' }, groups: { 'billing-ops': `Operator:${BILLING}` } },
    },
  });
});

after(() => ui?.close());

const at = (s: number) => new Date(Date.UTC(2026, 11, 2, 9, 0, s)).toISOString();

/** Rewrites a status row around the store's guard (as a late request copy did before the guard existed). */
async function replaceRow(endpointId: string, eventId: string, sessionId: string, change: Record<string, unknown>): Promise<void> {
  const client = new CosmosClient({ endpoint: ui!.stack.cosmos.endpoint, key: ui!.stack.cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
  try {
    const item = client.database(DATABASE).container('events').item(statusRowId(eventId, sessionId), [endpointId, eventId]);
    const { resource } = await item.read<Record<string, unknown>>();
    assert.ok(resource, `the row of ${eventId} on ${endpointId}`);
    await item.replace({ ...resource, ...change, updatedAt: new Date().toISOString() });
  } finally {
    client.dispose();
  }
}

/**
 * The same event settled on both endpoints, then each row put back to Pending by its request copy: two stale
 * rows, one eventId. Each endpoint's request and response have their own message ids.
 */
async function staleOnBothEndpoints(): Promise<{ eventId: string; sessionId: string }> {
  const eventId = `evt-${randomUUID().slice(0, 8)}`;
  const sessionId = `S-${randomUUID().slice(0, 8)}`;
  for (const endpointId of [BILLING, ERP]) {
    const base = { endpointId, eventId, sessionId, eventTypeId: 'OrderPlaced' };
    const request = `${eventId}-req-${endpointId}`;
    const response = `${eventId}-res-${endpointId}`;
    await ui!.stack.store.recordOutcome({
      history: { ...base, messageId: request, messageType: 'EventRequest', parentMessageId: 'self', enqueuedAt: at(1), to: endpointId },
      status: { ...base, messageId: request, messageType: 'EventRequest', parentMessageId: 'self', enqueuedAt: at(1), to: endpointId, payload: { n: 1 } },
    });
    await ui!.stack.store.recordOutcome({
      history: { ...base, messageId: response, messageType: 'ResolutionResponse', parentMessageId: request, enqueuedAt: at(2), from: endpointId },
      status: { ...base, messageId: response, messageType: 'ResolutionResponse', parentMessageId: request, enqueuedAt: at(2), from: endpointId },
    });
    await replaceRow(endpointId, eventId, sessionId, { status: 'Pending', subStatus: null, messageType: 'EventRequest', lastMessageId: request, parentMessageId: 'self', enqueuedAt: at(3) });
  }
  return { eventId, sessionId };
}

/** The stale row of `eventId` on `endpointId` (its Event cell names the endpoint). */
const staleRow = (page: Page, endpointId: string, eventId: string) => page.locator(`tr[data-stale-event="${eventId}"]`).filter({ hasText: endpointId });

describe('Operations → Reconcile for an Operator of some endpoints', () => {
  test("an endpoint's Operator may select and repair that endpoint's rows, and is offered no other endpoint's", async () => {
    const { eventId, sessionId } = await staleOnBothEndpoints();
    await ui!.signIn(billingOperator);
    const page = await ui!.open('/operations/reconcile');
    try {
      await staleRow(page, ERP, eventId).waitFor();
      // The positive signal first: the billing row's checkbox shows once the caller's permissions are in.
      await staleRow(page, BILLING, eventId).getByRole('checkbox').check();
      assert.equal(await staleRow(page, ERP, eventId).getByRole('checkbox').count(), 0, 'no checkbox on a row of an endpoint the caller may not repair');
      await page.getByRole('button', { name: 'Repair selected (1)' }).click();
      const dialog = page.getByRole('dialog', { name: 'Repair 1 row' });
      await dialog.getByRole('button', { name: 'Repair 1' }).click();
      await page.locator('[data-reconcile-result]').getByText('1 repaired, 0 unchanged.').waitFor();
    } finally {
      await page.close();
    }
    assert.equal((await ui!.stack.store.getStatusRow(BILLING, eventId, sessionId))?.status, 'Completed', 'the billing row was repaired');
    assert.equal((await ui!.stack.store.getStatusRow(ERP, eventId, sessionId))?.status, 'Pending', 'the erp row was left alone');
    const audits = (await ui!.stack.store.listAudits(eventId)).items.filter((a) => a.type === 'ReconcileStalePending');
    assert.deepEqual(audits.map((a) => [a.endpointId, a.auditor]), [[BILLING, billingOperator.name]]);
  });

  test('two rows under one eventId on two endpoints are selected apart and each reported unchanged with its endpoint', async () => {
    const { eventId, sessionId } = await staleOnBothEndpoints();
    await ui!.signIn(siteOperator);
    const page = await ui!.open('/operations/reconcile');
    try {
      for (const endpointId of [BILLING, ERP]) await staleRow(page, endpointId, eventId).getByRole('checkbox').check();
      // Each checkbox says which row it selects: the eventId alone would name two (checked after the result).
      const labelled: number[] = [];
      for (const endpointId of [BILLING, ERP])
        labelled.push(await staleRow(page, endpointId, eventId).getByRole('checkbox', { name: `Select ${eventId} on ${endpointId}`, exact: true }).count());
      await page.getByRole('button', { name: 'Repair selected (2)' }).click();
      const dialog = page.getByRole('dialog', { name: 'Repair 2 rows' });
      await dialog.waitFor();
      // Both rows move on after the preview the operator looked at: the apply must leave both alone and say so.
      for (const endpointId of [BILLING, ERP]) await replaceRow(endpointId, eventId, sessionId, { lastMessageId: `${eventId}-moved-${endpointId}` });
      await dialog.getByRole('button', { name: 'Repair 2' }).click();
      const result = page.locator('[data-reconcile-result]');
      await result.getByText('0 repaired, 2 unchanged.').waitFor();
      const lines = (await result.locator(':scope > div').allTextContents()).sort();
      assert.deepEqual(lines, [
        `${eventId} on ${BILLING}: the row changed since the preview (now Pending)`,
        `${eventId} on ${ERP}: the row changed since the preview (now Pending)`,
      ]);
      assert.deepEqual(labelled, [1, 1], 'each checkbox is named by eventId and endpoint');
    } finally {
      await page.close();
    }
    for (const endpointId of [BILLING, ERP]) assert.equal((await ui!.stack.store.getStatusRow(endpointId, eventId, sessionId))?.status, 'Pending', `${endpointId} untouched`);
    assert.deepEqual(ui!.pageErrors, []);
  });
});
