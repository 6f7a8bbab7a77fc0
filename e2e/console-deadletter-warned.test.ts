// Browser test of the replay preview's opt-in for dead letters whose replay is futile (`replayWarning`: a refused
// Manager command): the built console on the embedded Service Bus emulator and Cosmos server
// (server/testing/seededConsole.ts), real Chromium. Without the opt-in a listed replay leaves them out; the preview
// offers "Also replay N dead letters that will likely be refused again" (only when it has any), and ticking it
// previews again with `includeWarned`, says so in the dialog and on the confirm button, and the replay sends them.
// Before, the console had no way to replay them at all (the server accepted `includeWarned`, the page never sent it).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import { peekDeadLetters } from '../server/subscriptions/deadLetters.ts';
import { deadLetterOnMain, foreignMessage, refusedCommand } from '../server/subscriptions/testing/mainDeadLetters.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ database: 'deadletterwarned' });
});

after(() => ui?.close());

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
});
