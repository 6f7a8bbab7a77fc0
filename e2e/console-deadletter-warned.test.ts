// Browser test of the replay preview's opt-in for dead letters whose replay is futile (`replayWarning`: a refused
// Manager command): the built console on the embedded Service Bus emulator and Cosmos server
// (server/testing/seededConsole.ts), real Chromium. Without the opt-in a listed replay leaves them out; the preview
// offers "Also replay N dead letters that will likely be refused again" (only when it has any), and ticking it
// previews again with `includeWarned`, says so in the dialog and on the confirm button, and the replay sends them.
// Before, the console had no way to replay them at all (the server accepted `includeWarned`, the page never sent it).
// A warned dead letter that is also uncertain (a replay died during its send): its own "Resend anyway…" dialog says it
// will likely be refused again and resends only once the operator ticks that choice (`includeWarned`); before, the
// dialog said nothing of it and its confirm was a 409 `replay-warned`. And the confirm button's "including M" counts
// only the warned ones the replay sends: before, it counted the uncertain and already-sent ones too.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import { peekDeadLetters, type DeadLetterView } from '../server/subscriptions/deadLetters.ts';
import { ReplayJournal, type DeadLetterKey } from '../server/subscriptions/replayJournal.ts';
import { deadLetterOnMain, foreignMessage, refusedCommand } from '../server/subscriptions/testing/mainDeadLetters.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ database: 'deadletterwarned' });
});

after(() => ui?.close());

/** The dead letters of `endpoint`'s main subscription with these MessageIds, in that order. */
async function deadLettersOf(endpoint: string, messageIds: string[]): Promise<DeadLetterView[]> {
  const page = await peekDeadLetters(ui!.stack.serviceBus.client, endpoint, endpoint, { pageSize: 100 });
  return messageIds.flatMap((id) => page.items.filter((d) => d.messageId === id));
}

const keyOf = (endpoint: string, d: DeadLetterView): DeadLetterKey => ({ topic: endpoint, subscription: endpoint, sequenceNumber: d.sequenceNumber, messageId: d.messageId });

describe('replaying dead letters that will likely be refused again', () => {
  test('the preview offers an opt-in only when it has warned ones; ticked, the dialog and the button say so and the replay sends them', async () => {
    const ep = 'shippingendpoint';
    const eventId = 'evt-dead-1';
    const refused = randomUUID();
    const plain = randomUUID();
    await deadLetterOnMain(ui!.stack.serviceBus.client, ep, [refusedCommand(ep, { messageId: refused, eventId }), foreignMessage(ep, plain)]);
    const page = await ui!.open(`/topology/subscriptions/${ep}/${ep}`);
    const entry = page.locator(`[data-dead-letter="${refused}"]`);
    const other = page.locator(`[data-dead-letter="${plain}"]`);
    await entry.waitFor();
    await other.waitFor();
    const dialog = page.getByRole('dialog');

    // A preview without warned ones has no opt-in.
    await other.getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Replay selected (1)' }).click();
    await dialog.getByRole('button', { name: 'Replay 1' }).waitFor();
    assert.equal(await dialog.locator('[data-include-warned]').count(), 0, 'no opt-in without warned dead letters');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await other.getByRole('checkbox').uncheck();

    // The refused command: left out by default, the opt-in off.
    await entry.getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Replay selected (1)' }).click();
    await dialog.locator('[data-preview-warned="left"]').waitFor();
    const optIn = dialog.getByRole('checkbox', { name: 'Also replay 1 dead letter that will likely be refused again' });
    assert.equal(await optIn.isChecked(), false, 'off by default');
    assert.ok(await dialog.getByRole('button', { name: 'Replay 0' }).isDisabled());

    // Ticked: a new preview with includeWarned; the dialog lists it as replayed with its reason and event link, the
    // button names it.
    await optIn.check();
    const confirm = dialog.getByRole('button', { name: 'Replay 1, including 1 likely refused again' });
    await confirm.waitFor();
    const included = dialog.locator('[data-preview-warned="included"]');
    assert.match((await included.textContent()) ?? '', /1 of the selected messages is replayed although it will likely be refused again:.*a refused Manager command: replaying it is refused again/);
    assert.equal(await included.getByRole('link', { name: `open event ${eventId}` }).count(), 1, 'the reason links to the event');
    assert.equal(await dialog.locator('[data-nothing-to-send]').count(), 0);
    assert.ok(await optIn.isChecked());
    await confirm.click();

    // The replay sent it: its progress says 1 replayed, none skipped, and it left the dead-letter queue.
    const done = page.locator('[data-replay-state="done"]');
    await done.waitFor({ timeout: 60_000 });
    assert.equal(await done.locator('b').textContent(), 'Replay finished');
    assert.equal(await done.locator('span').first().textContent(), '1 replayed');
    assert.equal(await done.locator('[data-replay-skipped]').count(), 0);
    const left = await peekDeadLetters(ui!.stack.serviceBus.client, ep, ep, { pageSize: 100 });
    assert.deepEqual(left.items.filter((d) => d.messageId === refused), [], 'the refused command was replayed, not left');
    assert.deepEqual(ui!.pageErrors, []);
    await page.close();
  });

  test('"Resend anyway…" on a warned uncertain dead letter says it is likely refused again and resends only when that is ticked', async () => {
    const ep = 'crmendpoint';
    const eventId = 'evt-dead-resend';
    const refused = randomUUID();
    await deadLetterOnMain(ui!.stack.serviceBus.client, ep, [refusedCommand(ep, { messageId: refused, eventId })]);
    const [d] = await deadLettersOf(ep, [refused]);
    assert.ok(d?.replayWarning, 'warned');
    // A replay that died right after its claim: the journal holds it `sending`, so the page shows it uncertain.
    const journal = new ReplayJournal(ui!.stack.store.database);
    assert.ok(await journal.claim(keyOf(ep, d), { operationId: randomUUID(), auditor: 'a replay that died' }));

    const page = await ui!.open(`/topology/subscriptions/${ep}/${ep}`);
    const entry = page.locator(`[data-dead-letter="${refused}"]`);
    await entry.locator('[data-replay-verdict="uncertain"]').waitFor();
    await entry.getByRole('button', { name: 'Resend anyway…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const confirm = dialog.getByRole('button', { name: 'Resend anyway' });
    await confirm.waitFor();

    // The dialog names the warning, and resending is a choice of its own, off by default (before: neither, and the
    // confirm was answered 409 replay-warned).
    const warning = dialog.locator('[data-resend-warned]');
    assert.equal(await warning.count(), 1, 'the dialog says it will likely be refused again');
    assert.match((await warning.textContent()) ?? '', /a refused Manager command: replaying it is refused again/);
    const optIn = dialog.getByRole('checkbox', { name: 'Resend it although it will likely be refused again' });
    assert.equal(await optIn.isChecked(), false, 'off by default');
    assert.ok(await confirm.isDisabled(), 'no resend without the choice');

    await optIn.check();
    assert.ok(await confirm.isEnabled());
    await confirm.click();
    const done = page.locator('[data-replay-state="done"]');
    await done.waitFor({ timeout: 60_000 });
    assert.match((await done.textContent()) ?? '', /1 replayed.*1 decided: resent/);
    assert.deepEqual(await deadLettersOf(ep, [refused]), [], 'resent and removed from the dead-letter queue');
    const record = (await journal.get(keyOf(ep, d)))?.record;
    assert.equal(record?.decision?.kind, 'resend', 'the decision is stamped on its record');
    assert.deepEqual(ui!.pageErrors, []);
    await page.close();
  });

  test('the confirm button counts only the warned ones the replay sends, not uncertain or already-sent ones', async () => {
    const ep = 'billingendpoint';
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    await deadLetterOnMain(
      ui!.stack.serviceBus.client,
      ep,
      ids.map((id, i) => refusedCommand(ep, { messageId: id, eventId: `evt-dead-count-${i}` })),
    );
    const [plain, unsure, sent] = await deadLettersOf(ep, ids);
    const journal = new ReplayJournal(ui!.stack.store.database);
    // One uncertain (a claim left `sending`), one whose copy an earlier replay sent (`sent`: only removed now).
    assert.ok(await journal.claim(keyOf(ep, unsure!), { operationId: randomUUID(), auditor: 'a replay that died' }));
    const claim = await journal.claim(keyOf(ep, sent!), { operationId: randomUUID(), auditor: 'an earlier replay' });
    assert.ok(claim && (await journal.transition(claim, { state: 'sent', sentAt: new Date().toISOString() })));

    const page = await ui!.open(`/topology/subscriptions/${ep}/${ep}`);
    for (const id of ids) await page.locator(`[data-dead-letter="${id}"]`).getByRole('checkbox', { name: /^Select dead letter/ }).check();
    await page.getByRole('button', { name: 'Replay selected (3)' }).click();
    const dialog = page.getByRole('dialog');
    // Only the plain one would be sent with the opt-in (before: "Also replay 3 …").
    const optIn = dialog.getByRole('checkbox', { name: 'Also replay 1 dead letter that will likely be refused again' });
    await optIn.waitFor();
    await optIn.check();
    // Sent: the plain one; removed without sending: the already-sent one; left: the uncertain one. Before: "including 3".
    const confirm = dialog.getByRole('button', { name: 'Replay 1, including 1 likely refused again' });
    await confirm.waitFor();
    await confirm.click();
    const done = page.locator('[data-replay-state="done"]');
    await done.waitFor({ timeout: 60_000 });
    assert.match((await done.textContent()) ?? '', /1 replayed.*1 already sent earlier.*1 uncertain/);
    assert.deepEqual((await deadLettersOf(ep, ids)).map((x) => x.sequenceNumber), [unsure!.sequenceNumber], 'only the uncertain one is left');
    assert.ok(plain);
    assert.deepEqual(ui!.pageErrors, []);
    await page.close();
  });
});
