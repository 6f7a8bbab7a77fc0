// Operations → Reconcile in Chromium (playwright-core) on the built console and the embedded stack: a skip claim
// left by a dead console (written 5 minutes ago, no receipt) and a session draining with a gap are listed with why
// they are stuck and what the repair does; the operator selects both and repairs them from the page; the skip is
// sent once, the cursor moves, both repairs are audited. A failed repair shows its error inside the still-open
// dialog. While the scan has not answered the page says it is scanning, never "nothing stuck", and after a failed
// scan it shows the error alone. The rows show while the broker's session scan is still held, the sessions part saying
// it is still checking. A stuck row whose state to restore is unknown (its event's history past the cap) is listed
// with why, "None offered" and no checkbox; so is a Pending row whose answer no longer parses. A row whose command
// the subscriber refused (its restore by the Resolver lost) is listed as a refused command and restored from the page.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { CosmosClient } from '@azure/cosmos';
import { Address, decodeSessionState, emptySessionState, encodeSessionState, MessageType, Prop, Topic } from '@nimbus/sdk/contract';
import { createStore } from '../../lib/store/index.ts';
import { CONSOLE_DIR } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';
import type { ConsoleTestStack } from '../testing/stack.ts';
import { seedConsoleData } from '../testing/seed.ts';
import { commandMessageId } from '../manager/commands.ts';
import { claimExpectation } from '../manager/manager.ts';
import { RECONCILE_AUDIT_EVENT } from './draining.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const ep = 'billingendpoint';

let ui: SeededConsole | undefined;
let stack: ConsoleTestStack;
let pageErrors: string[] = [];

before(async () => {
  // The test seeds the demo rows itself: it plants a dead console's claim on one of them.
  ui = await startSeededConsole({ database: 'reconcilepage', dir: DIR, demoData: false });
  ({ stack, pageErrors } = ui);
});

after(() => ui?.close());

/**
 * The session's lock, once the console lets go of it: the page's preview, refetched after the repair, looks into
 * each candidate session under its lock (server/reconcile/draining.ts) and may still hold one for a moment.
 */
async function acceptWhenFree(sessionId: string) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await stack.serviceBus.client.acceptSession(ep, ep, sessionId);
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'SessionCannotBeLocked' || attempt >= 20) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

const open = (path: string): Promise<Page> => ui!.open(path);

/** The reconcile API, whichever part a GET asks for (`?part=rows`, `?part=sessions`). */
const isReconcileApi = (url: URL) => url.pathname === '/api/operations/reconcile';
const isSessionScan = (url: URL) => isReconcileApi(url) && url.searchParams.get('part') === 'sessions';

describe('Operations → Reconcile page', () => {
  test('while the scan runs the page says so, and after a failed scan it shows only the error: never "nothing stuck"', async () => {
    const page = await ui!.browser.newPage();
    page.on('pageerror', (e) => pageErrors.push(`/operations/reconcile: ${e.message}`));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let scans = 0;
    // Only the scan (GET, both its parts: the rows and the sessions) is held, then answered as a store outage would
    // be; every scan of this page fails.
    await page.route(isReconcileApi, async (route) => {
      if (route.request().method() !== 'GET') return route.continue();
      scans++;
      await held;
      // (The page may already be closed when a failed test lets the scan go.)
      await route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: 'unavailable', detail: 'test: the store is unavailable' }) }).catch(() => undefined);
    });
    try {
      await page.goto(`${ui!.url}/operations/reconcile`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      await page.getByRole('heading', { name: 'Operations · Reconcile Pending rows' }).waitFor();
      const falseAllClear = async () => ({
        staleHeading: await page.getByRole('heading', { name: /^Stale Pending rows/ }).count(),
        noStale: await page.getByText('No stale Pending rows').count(),
        noStuck: await page.getByText('No stuck rows').count(),
        handoffs: await page.getByRole('heading', { name: /^Handoffs past their ExpectedBy/ }).count(),
      });
      const none = { staleHeading: 0, noStale: 0, noStuck: 0, handoffs: 0 };
      assert.deepEqual(await falseAllClear(), none, 'nothing is reported before the scan answers');
      await page.getByRole('status').filter({ hasText: 'Scanning' }).waitFor();
      assert.ok(scans >= 1, 'the scan was asked for');
      release();
      await page.getByRole('alert').filter({ hasText: 'test: the store is unavailable' }).waitFor();
      assert.deepEqual(await falseAllClear(), none, 'after a failed scan only the error is shown');
      assert.equal(await page.getByRole('status').filter({ hasText: 'Scanning' }).count(), 0, 'no longer scanning');
    } finally {
      release();
      await page.close();
    }
  });

  test('stuck rows and draining sessions show why and what the repair does, and are repaired from the page', async () => {
    const seeded = await seedConsoleData(stack.store);
    // The claim a console wrote 5 minutes ago before it died: its own clock says so.
    const past = await createStore({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'reconcilepage', now: () => new Date(Date.now() - 5 * 60_000) });
    const failed = (await past.getStatusRow(ep, seeded.failed.eventId, seeded.failed.sessionId))!;
    const skipId = commandMessageId(MessageType.SkipRequest, failed, failed.lastMessageId);
    await past.writeStatus(
      { endpointId: ep, eventId: failed.eventId, sessionId: failed.sessionId, messageId: skipId, messageType: MessageType.SkipRequest, eventTypeId: failed.eventTypeId, parentMessageId: failed.lastMessageId, from: Topic.Manager, to: ep, enqueuedAt: new Date().toISOString() },
      claimExpectation(failed),
    );
    await past.close();

    // A session unblocked and draining, waiting for parked #0, which is gone; #1 is still parked.
    const sessionId = `S-${randomUUID().slice(0, 8)}`;
    const main = await stack.serviceBus.client.acceptSession(ep, ep, sessionId);
    await main.setSessionState(Buffer.from(encodeSessionState({ ...emptySessionState(), DeferredCount: 2, NextDeferralSequence: 2, NextReplaySequence: 0 })));
    await main.close();
    const sender = stack.serviceBus.client.createSender(ep);
    await sender.sendMessages({ messageId: `${sessionId}-1~parked`, sessionId, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: Address.Deferred, [Prop.DeferralSequence]: 1 } });
    await sender.close();
    const parkedEvent = `evt-${sessionId}`;
    const w = { endpointId: ep, eventId: parkedEvent, sessionId, messageId: `${parkedEvent}-def`, messageType: MessageType.DeferralResponse, parentMessageId: `${parkedEvent}-req`, enqueuedAt: new Date().toISOString() };
    await stack.store.recordOutcome({ history: w, status: w });

    const page = await open('/operations/reconcile');
    const row = page.locator(`[data-stuck-event="${failed.eventId}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /no "sent" receipt/);
    assert.match((await row.textContent()) ?? '', /Re-send: send the SkipRequest again with the same MessageId/);
    assert.match((await row.textContent()) ?? '', /Restore: put the row back to Failed/);
    const session = page.locator(`[data-draining-session="${sessionId}"]`);
    await session.waitFor();
    assert.match((await session.textContent()) ?? '', /waits for parked message #0/);
    assert.match((await session.textContent()) ?? '', /move the replay past the gap to #1/);

    await page.getByRole('checkbox', { name: `Repair ${failed.eventId}` }).check();
    await page.getByRole('checkbox', { name: `Repair session ${sessionId}` }).check();
    await page.getByRole('button', { name: 'Repair selected (2)' }).click();
    // The first apply fails (the request never reaches the console): the error is shown inside the dialog, which
    // stays open (the page behind a modal dialog is inert, a screen reader would never hear an error there).
    await page.route(isReconcileApi, (route) => (route.request().method() === 'POST' ? route.abort('connectionreset') : route.continue()));
    const dialog = page.getByRole('dialog', { name: 'Repair 2 rows' });
    await dialog.getByRole('button', { name: 'Repair 2' }).click();
    await dialog.getByRole('alert').waitFor();
    assert.equal(await page.locator('[data-reconcile-result]').count(), 0, 'nothing was repaired');
    await page.unroute(isReconcileApi);
    await dialog.getByRole('button', { name: 'Repair 2' }).click();
    await page.locator('[data-reconcile-result]').getByText('2 repaired, 0 unchanged.').waitFor();
    await page.close();

    assert.equal((await stack.store.getAudit(failed.eventId, skipId))?.type, 'Skip', 'the skip was sent and its receipt written');
    const receiver = await acceptWhenFree(failed.sessionId);
    try {
      const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 3000 });
      assert.deepEqual(got.map((m) => m.messageId), [skipId]);
      for (const m of got) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
    const s = await acceptWhenFree(sessionId);
    try {
      assert.equal(decodeSessionState(await s.getSessionState()).NextReplaySequence, 1);
    } finally {
      await s.close();
    }
    assert.ok((await stack.store.listAudits(failed.eventId)).items.some((a) => a.type === 'ReconcileStuckCommand' && a.auditor === 'anonymous'));
    assert.ok((await stack.store.listAudits(RECONCILE_AUDIT_EVENT)).items.some((a) => a.type === 'ReconcileDrainingSession'));
    assert.deepEqual(pageErrors, []);
  });
  test('a stuck row whose state to restore is unknown (history past the cap) is listed with why and without controls', async () => {
    // A failure whose history entry is missing, on an event with more than 2,000 older entries (HISTORY_CAP), then a
    // skip of it that the Resolver recorded a quarter of an hour ago and nobody answered.
    const eventId = `evt-long-${randomUUID().slice(0, 8)}`;
    const sessionId = 's-long';
    const older = Date.now() - 60 * 60_000;
    for (let i = 0; i <= 2000; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, 2001 - i) }, (_, k) =>
          stack.store.recordHistory({ endpointId: ep, eventId, sessionId: 's-other', messageId: `${eventId}-${i + k}`, messageType: MessageType.EventRequest, enqueuedAt: new Date(older + i + k).toISOString() }),
        ),
      );
    }
    const past = await createStore({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'reconcilepage', now: () => new Date(Date.now() - 15 * 60_000) });
    const failed = await past.writeStatus({ endpointId: ep, eventId, sessionId, messageId: `${eventId}-failed`, messageType: MessageType.ErrorResponse, eventTypeId: 'OrderPlaced', parentMessageId: `${eventId}-req`, errorText: 'boom', enqueuedAt: new Date(older + 3000).toISOString() });
    assert.ok(failed.outcome === 'written');
    const skipId = commandMessageId(MessageType.SkipRequest, failed.row, failed.row.lastMessageId);
    const skip = { endpointId: ep, eventId, sessionId, messageId: skipId, messageType: MessageType.SkipRequest, eventTypeId: 'OrderPlaced', parentMessageId: failed.row.lastMessageId, from: Topic.Manager, to: ep, enqueuedAt: new Date(older + 4000).toISOString() };
    assert.equal((await past.writeStatus(skip, claimExpectation(failed.row))).outcome, 'written');
    await past.close();
    await stack.store.recordHistory(skip);

    const page = await open('/operations/reconcile');
    const row = page.locator(`[data-stuck-event="${eventId}"]`);
    await row.waitFor();
    assert.match((await row.textContent()) ?? '', /nobody answered/);
    assert.match((await row.textContent()) ?? '', /no restore is offered: the event's history is longer than the 2000 entries/);
    assert.match((await row.textContent()) ?? '', /None offered/);
    assert.equal(await page.getByRole('checkbox', { name: `Repair ${eventId} on ${ep}` }).count(), 0, 'nothing to select for it');
    await page.close();
    assert.deepEqual(pageErrors, []);
  });

  test('a Pending row whose answer no longer parses is listed with why and without controls', async () => {
    const eventId = `evt-unreadable-${randomUUID().slice(0, 8)}`;
    const request = { endpointId: ep, eventId, sessionId: 's-unreadable', messageId: `${eventId}-req`, messageType: MessageType.EventRequest, eventTypeId: 'OrderPlaced', enqueuedAt: new Date().toISOString() };
    assert.equal((await stack.store.writeStatus(request)).outcome, 'written');
    await stack.store.recordHistory(request);
    // The endpoint's answer as a document the store would never write: its time is not a time.
    const raw = new CosmosClient({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, connectionPolicy: { enableEndpointDiscovery: false } });
    try {
      await raw.database('reconcilepage').container('history').items.create({ id: `${eventId}-answer`, eventId, endpointId: ep, sessionId: request.sessionId, messageId: `${eventId}-answer`, parentMessageId: request.messageId, messageType: MessageType.ResolutionResponse, enqueuedAt: 'not a time' });
    } finally {
      raw.dispose();
    }

    const page = await open('/operations/reconcile');
    const row = page.locator(`[data-stuck-event="${eventId}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute('data-stuck-kind'), 'unreadable');
    const text = (await row.textContent()) ?? '';
    assert.match(text, /answer unreadable/);
    assert.match(text, new RegExp(`no longer parses: ${eventId}-answer \\(`));
    assert.match(text, /None offered: the answer cannot be read/);
    assert.equal(await page.getByRole('checkbox', { name: `Repair ${eventId} on ${ep}` }).count(), 0, 'nothing to select for it');
    await page.close();
    assert.deepEqual(pageErrors, []);
  });

  test('a row Pending from a command the subscriber refused is listed as a refused command, with who and why, and restored from the page', async () => {
    // A handoff park, the Manager's claim of its completion a quarter of an hour ago (recorded by the Resolver), and
    // the subscriber's CommandRefused notice about it; the Resolver's restore after the notice was lost.
    const eventId = `evt-refused-${randomUUID().slice(0, 8)}`;
    const sessionId = 's-refused';
    const past = await createStore({ endpoint: stack.cosmos.endpoint, key: stack.cosmos.key, database: 'reconcilepage', now: () => new Date(Date.now() - 15 * 60_000) });
    const park = { endpointId: ep, eventId, sessionId, messageId: `${eventId}-park`, messageType: MessageType.PendingHandoffResponse, eventTypeId: 'OrderPlaced', parentMessageId: `${eventId}-req`, from: ep, handoffReason: 'Ledger import queued', externalJobId: 'JOB-R1', expectedBy: new Date(Date.now() + 3_600_000).toISOString(), enqueuedAt: new Date(Date.now() - 20 * 60_000).toISOString() };
    const parked = await past.recordOutcome({ history: park, status: park });
    assert.ok(parked.status.outcome === 'written');
    const commandId = commandMessageId(MessageType.HandoffCompletedRequest, parked.status.row, park.messageId);
    const command = { endpointId: ep, eventId, sessionId, messageId: commandId, messageType: MessageType.HandoffCompletedRequest, eventTypeId: 'OrderPlaced', parentMessageId: park.messageId, from: Topic.Manager, to: ep, enqueuedAt: new Date(Date.now() - 15 * 60_000).toISOString() };
    assert.equal((await past.writeStatus(command, claimExpectation(parked.status.row))).outcome, 'written');
    await past.close();
    await stack.store.recordHistory(command);
    await stack.store.recordHistory({ endpointId: ep, eventId, sessionId, messageId: `${eventId}-refusal`, messageType: MessageType.ErrorResponse, eventTypeId: 'OrderPlaced', parentMessageId: commandId, from: ep, to: 'Resolver', deadLetterReason: 'CommandRefused', deadLetterErrorDescription: 'HandoffCompletedRequest refused: not the pending handoff <b>of</b> this session', enqueuedAt: new Date(Date.now() - 14 * 60_000).toISOString() });

    const page = await open('/operations/reconcile');
    const row = page.locator(`[data-stuck-event="${eventId}"]`);
    await row.waitFor();
    assert.equal(await row.getAttribute('data-stuck-kind'), 'refused');
    const text = (await row.textContent()) ?? '';
    assert.match(text, /command refused/);
    assert.match(text, new RegExp(`that ${ep} refused \\(CommandRefused notice ${eventId}-refusal: HandoffCompletedRequest refused: not the pending handoff <b>of</b> this session\\)`), 'who and why, shown as text');
    assert.match(text, /Restore: put the row back to Pending \(PendingHandoffResponse/);

    await page.getByRole('checkbox', { name: `Repair ${eventId} on ${ep}` }).check();
    await page.getByRole('button', { name: 'Repair selected (1)' }).click();
    await page.getByRole('dialog', { name: 'Repair 1 row' }).getByRole('button', { name: 'Repair 1' }).click();
    await page.locator('[data-reconcile-result]').getByText('1 repaired, 0 unchanged.').waitFor();
    await page.close();
    const restored = await stack.store.getStatusRow(ep, eventId, sessionId);
    assert.deepEqual([restored?.status, restored?.subStatus, restored?.lastMessageId, restored?.externalJobId], ['Pending', 'Handoff', park.messageId, 'JOB-R1']);
    assert.ok((await stack.store.listAudits(eventId)).items.some((a) => a.type === 'ReconcileStuckCommand' && /refused/.test(a.comment ?? '')));
    assert.deepEqual(pageErrors, []);
  });

  test('the rows show while the session scan is still running; the sessions part has its own state', async () => {
    await seedConsoleData(stack.store, Date.now() - 60_000, '-held');
    const page = await ui!.browser.newPage();
    page.on('pageerror', (e) => pageErrors.push(`/operations/reconcile: ${e.message}`));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Only the broker's session scan is held (as a slow broker would hold it); the rows are read as usual.
    await page.route(isSessionScan, async (route) => {
      await held;
      await route.continue().catch(() => undefined);
    });
    try {
      await page.goto(`${ui!.url}/operations/reconcile`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      // The overdue handoff the seed left is listed while the scan is held: the rows did not wait for it.
      await page.getByRole('heading', { name: /^Handoffs past their ExpectedBy/ }).waitFor();
      await page.getByRole('link', { name: 'evt-handoff-2-held' }).waitFor();
      await page.getByRole('heading', { name: /^Stale Pending rows/ }).waitFor();
      const sessionsChecking = page.getByRole('status').filter({ hasText: 'Checking parked sessions' });
      assert.equal(await sessionsChecking.count(), 1, 'the sessions part says it is still checking');
      assert.equal(await page.getByText('No session drains with a gap').count(), 0, 'no all-clear for sessions before their scan answers');
      assert.equal(await page.getByRole('status').filter({ hasText: 'Scanning Pending rows' }).count(), 0, 'the rows are no longer scanning');
      release();
      await page.getByText('Sessions with parked events, read under the session').waitFor();
      assert.equal(await sessionsChecking.count(), 0, 'the sessions part has answered');
      assert.deepEqual(pageErrors, []);
    } finally {
      release();
      await page.close();
    }
  });
});
