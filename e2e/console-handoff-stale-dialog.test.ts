// The Event page's Complete handoff dialog sends the handoff messageId the dialog was opened on (shownMessageId, as
// Resubmit and Skip do), not the event's as it is when confirmed (e.messageId, before: failing on that code).
// docs/console.md: "A handoff settlement pins its version through its messageId". Here: the operator opens "Complete handoff" on handoff H1 (external job JOB-A); behind the
// open dialog another operator resubmits the event and the endpoint hands it off again as H2 (a new external job,
// JOB-B, not done). The page refreshes behind the dialog; the operator confirms the completion meant for JOB-A: it
// names H1 and is refused 409 - before, the console completed H2, the event Completed and its session released
// while JOB-B had not run.
// Built console on the embedded emulator and Cosmos, real Chromium (server/testing/seededConsole.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MessageType } from '@nimbus/sdk/contract';
import type { StatusWrite } from '../lib/store/index.ts';
import { msg } from '../lib/store/testing/fixtures.ts';
import { seedEvent, type SeededEvent } from '../server/testing/seed.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let handoff: SeededEvent | undefined;

before(async () => {
  ui = await startSeededConsole({
    database: 'rvhandoffstale',
    prepare: async ({ stack, base }) => {
      handoff = await seedEvent(
        stack.store,
        base,
        { endpointId: 'erpendpoint', eventId: 'evt-handoff-stale', sessionId: 'INV-90', eventTypeId: 'InvoiceIssued', payload: { invoiceId: 'INV-90' } },
        MessageType.PendingHandoffResponse,
        { handoffReason: 'Ledger import queued', externalJobId: 'JOB-A', expectedBy: new Date(base + 3_600_000).toISOString() },
      );
    },
  });
});

after(() => ui?.close());

describe('Complete handoff dialog left open while the event moves to a new handoff', () => {
  test('the confirm acts on the handoff the dialog was opened on (H1), not on the new one (H2)', async () => {
    const page = await ui!.browser.newPage();
    const ev = handoff!;
    const detailsPath = `/api/endpoints/${ev.endpointId}/events/${ev.eventId}`;
    const completions: string[] = [];
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname;
      if (r.method() === 'POST' && path.startsWith(`/api/event/handoff/complete/${ev.endpointId}/${ev.eventId}/`)) completions.push(decodeURIComponent(path.split('/').at(-1)!));
    });
    try {
      await page.goto(`${ui!.url}/endpoints/${ev.endpointId}/events/${ev.eventId}`);
      await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
      await page.getByText('JOB-A', { exact: true }).waitFor();
      // The operator opens the completion for JOB-A's handoff.
      await page.getByRole('button', { name: 'Complete handoff', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();

      // Behind the dialog: another operator resubmits the event (through the console's API), the Resolver records the
      // command, and the endpoint hands the event off again - a new external job, JOB-B.
      const theirs = await fetch(`${ui!.url}/api/event/resubmit/${ev.endpointId}/${ev.eventId}`, { method: 'POST' });
      assert.equal(theirs.status, 200, await theirs.clone().text());
      const command = ((await theirs.json()) as { messageId: string }).messageId;
      const record = (m: StatusWrite) => ui!.stack.store.recordOutcome({ history: { ...m, enqueuedAt: m.enqueuedAt ?? new Date().toISOString() }, status: m });
      const base = { endpointId: ev.endpointId, eventId: ev.eventId, sessionId: ev.sessionId, eventTypeId: ev.eventTypeId };
      await record(msg(MessageType.ResubmissionRequest, { ...base, messageId: command, parentMessageId: ev.lastMessageId, payload: ev.payload, from: 'Manager', to: ev.endpointId }));
      const h2 = msg(MessageType.PendingHandoffResponse, { ...base, parentMessageId: command, from: ev.endpointId, to: 'Resolver', handoffReason: 'Ledger import queued again', externalJobId: 'JOB-B' } as never);
      await record(h2);
      const row = await ui!.stack.store.getStatusRow(ev.endpointId, ev.eventId, ev.sessionId);
      assert.deepEqual([row?.status, row?.subStatus, row?.lastMessageId], ['Pending', 'Handoff', h2.messageId], 'the event is a new pending handoff (H2)');

      // The page's timed refresh reads the event again behind the open dialog (within 10 s).
      await page.waitForResponse((r) => new URL(r.url()).pathname === detailsPath && r.request().method() === 'GET', { timeout: 30_000 });
      await page.getByText('JOB-B', { exact: true }).waitFor({ timeout: 30_000 });

      // The operator confirms the completion they opened for JOB-A.
      const answered = page.waitForResponse((r) => new URL(r.url()).pathname.startsWith('/api/event/handoff/complete/'), { timeout: 60_000 });
      await dialog.getByRole('button', { name: 'Complete handoff' }).click();
      const answer = await answered;
      const after = await ui!.stack.store.getStatusRow(ev.endpointId, ev.eventId, ev.sessionId);
      assert.deepEqual(
        { sentFor: completions, status: answer.status() },
        { sentFor: [ev.lastMessageId], status: 409 },
        `H1 = ${ev.lastMessageId}, H2 = ${h2.messageId}; answered ${answer.status()} ${await answer.text()}; the row is now ${after?.status} ${after?.messageType}`,
      );
      // Refused as Resubmit and Skip on a stale view are ('changed'): the dialog says what the event now is, so a
      // second, deliberate confirm acts on H2.
      assert.equal((JSON.parse(await answer.text()) as { code?: string }).code, 'changed');
      await dialog.getByText('The event changed since this dialog opened', { exact: false }).waitFor({ timeout: 30_000 });
    } finally {
      await page.close();
    }
  });
});
