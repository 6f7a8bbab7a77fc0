// Browser test of Topology → Subscriptions dead letters as a lead to the fix: the built console on the embedded
// Service Bus emulator and Cosmos server (server/testing/seededConsole.ts), real Chromium. A dead letter whose
// message carries an EventId shows its event id and type and links to the event's page (history, payload,
// Resubmit with changes); a foreign message shows no link; the replay preview of a permanently failed dead letter
// warns that replaying it unchanged fails again. The page says how many dead letters the queue holds (it lists 50
// at a time; Purge, and Replay all without a filter, act on all of them). A refused Manager command (CommandRefused) is
// marked as not replayed, and the preview leaves it out with a link to its event.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { eventBody, MessageType, Prop } from '@nimbus/sdk/contract';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import { untilDataDrawn } from '../server/testing/pageWait.ts';
import { deadLetterOnMain, foreignMessage, refusedCommand } from '../server/subscriptions/testing/mainDeadLetters.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole();
});

after(() => ui?.close());

describe('dead letters lead to their event', () => {
  test('a dead letter links to its event page, a foreign one does not, and the preview warns of a permanent failure', async () => {
    const ep = 'billingendpoint';
    // The demo's dead-lettered event (server/testing/seed.ts): its page exists.
    const eventId = 'evt-dead-1';
    const eventMessage = randomUUID();
    const foreignMessageId = randomUUID();
    await deadLetterOnMain(
      ui!.stack.serviceBus.client,
      ep,
      [
        {
          message: {
            messageId: eventMessage,
            body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-1' })),
            applicationProperties: { [Prop.To]: ep, [Prop.MessageType]: MessageType.EventRequest, [Prop.EventId]: eventId, [Prop.EventTypeId]: 'OrderPlaced' },
          },
          reason: 'Permanent failure: PayloadDeserializationError: the event payload is not valid JSON',
        },
        foreignMessage(ep, foreignMessageId),
      ],
      'the event payload is not valid JSON',
    );

    const page = await ui!.open(`/topology/subscriptions/${ep}/${ep}`);
    const entry = page.locator(`[data-dead-letter="${eventMessage}"]`);
    await entry.waitFor();
    await page.locator(`[data-dead-letter="${foreignMessageId}"]`).waitFor();
    assert.ok(await untilDataDrawn(page), 'the dead-letter list is drawn');
    // The entry's visible line, not its collapsed properties (which hold EventId too).
    assert.match(await entry.locator('div').first().innerText(), /event evt-dead-1 · OrderPlaced/, 'the entry shows the event id and type');
    assert.equal(await page.locator(`[data-dead-letter="${foreignMessageId}"] a[href*="/events/"]`).count(), 0, 'a foreign message links to no event');

    // The preview of the permanently failed dead letter warns before anything is replayed.
    await entry.getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Replay selected (1)' }).click();
    const dialog = page.getByRole('dialog');
    const warning = dialog.locator('[data-permanent-failures]');
    await warning.waitFor();
    assert.match(
      (await warning.textContent()) ?? '',
      /1 of the selected messages was dead-lettered as a permanent failure; replaying it unchanged will fail again — open the event to resubmit with changes\./,
    );
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });

    // The link goes to the event's page, where history, payload and Resubmit with changes are.
    await entry.getByRole('link', { name: eventId }).click();
    await page.waitForURL(new RegExp(`/endpoints/${ep}/events/${eventId}$`));
    await page.getByTestId('event-status').waitFor();
    assert.deepEqual(ui!.pageErrors, []);
    await page.close();
  });

  test('a refused Manager command is marked in the list and the preview leaves it out, with a link to its event', async () => {
    // Its own subscription: the tests around it dead-letter on billing's and crm's.
    const ep = 'shippingendpoint';
    const eventId = 'evt-dead-1';
    const refused = randomUUID();
    await deadLetterOnMain(ui!.stack.serviceBus.client, ep, [refusedCommand(ep, { messageId: refused, eventId })]);
    const page = await ui!.open(`/topology/subscriptions/${ep}/${ep}`);
    const entry = page.locator(`[data-dead-letter="${refused}"]`);
    await entry.waitFor();
    const note = entry.locator('[data-replay-warning="CommandRefused"]');
    assert.match((await note.textContent()) ?? '', /^Not replayed: a refused Manager command: replaying it is refused again; resubmit or skip the event from its page instead \(open event evt-dead-1\)\.$/);
    await entry.getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Replay selected (1)' }).click();
    const dialog = page.getByRole('dialog');
    const warned = dialog.locator('[data-preview-warned]');
    await warned.waitFor();
    assert.match((await warned.textContent()) ?? '', /1 of the selected messages is left in the queue, not replayed:/);
    assert.equal(await warned.getByRole('link', { name: `open event ${eventId}` }).count(), 1, 'the warning links to the event');
    assert.match((await dialog.locator('[data-nothing-to-send]').textContent()) ?? '', /Nothing to send: replaying it unchanged is futile/);
    assert.ok(await dialog.getByRole('button', { name: 'Replay 0' }).isDisabled(), 'nothing to confirm');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.deepEqual(ui!.pageErrors, []);
    await page.close();
  });

  test('the page says how many dead letters the queue holds, the number Purge acts on', async () => {
    // Its own subscription: the test above dead-letters on billing's.
    const ep = 'crmendpoint';
    await deadLetterOnMain(ui!.stack.serviceBus.client, ep, [foreignMessage(ep), foreignMessage(ep), foreignMessage(ep)]);
    const page = await ui!.open(`/topology/subscriptions/${ep}/${ep}`);
    const total = page.getByTestId('deadletter-total');
    await total.waitFor();
    assert.match((await total.textContent()) ?? '', /^3 dead letters in this queue \(the broker's count at .+\)$/);
    await page.close();
  });
});
