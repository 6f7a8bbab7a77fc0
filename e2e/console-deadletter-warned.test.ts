// Browser test of the replay preview's opt-in for dead letters whose replay is futile (`replayWarning`: a refused
// Manager command): the built console on the embedded Service Bus emulator and Cosmos server
// (server/testing/seededConsole.ts), real Chromium. Without the opt-in a listed replay leaves them out; the preview
// offers "Also replay N dead letters that will likely be refused again" (only when it has any), and ticking it
// previews again with `includeWarned`, says so in the dialog and on the confirm button, and the replay sends them.
// Before, the console had no way to replay them at all (the server accepted `includeWarned`, the page never sent it).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { ServiceBusMessage } from '@azure/service-bus';
import { eventBody, MessageType, Prop, WireText } from '@nimbus/sdk/contract';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import { peekDeadLetters } from '../server/subscriptions/deadLetters.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ database: 'deadletterwarned' });
});

after(() => ui?.close());

/** Sends each message to `endpoint`'s topic and dead-letters it from the endpoint's main subscription (one session). */
async function deadLetterOnMain(endpoint: string, messages: Array<{ message: ServiceBusMessage; reason: string }>): Promise<void> {
  const client = ui!.stack.serviceBus.client;
  const sessionId = `s-${randomUUID().slice(0, 8)}`;
  const sender = client.createSender(endpoint);
  for (const { message } of messages) await sender.sendMessages({ ...message, sessionId });
  await sender.close();
  const reasons = new Map(messages.map(({ message, reason }) => [String(message.messageId), reason]));
  const receiver = await client.acceptSession(endpoint, endpoint, sessionId);
  try {
    while (reasons.size > 0) {
      for (const m of await receiver.receiveMessages(10, { maxWaitTimeInMs: 5000 })) {
        const reason = reasons.get(String(m.messageId));
        if (reason === undefined) continue;
        await receiver.deadLetterMessage(m, { deadLetterReason: reason, deadLetterErrorDescription: 'seeded' });
        reasons.delete(String(m.messageId));
      }
    }
  } finally {
    await receiver.close();
  }
}

describe('replaying dead letters that will likely be refused again', () => {
  test('the preview offers an opt-in only when it has warned ones; ticked, the dialog and the button say so and the replay sends them', async () => {
    const ep = 'shippingendpoint';
    const eventId = 'evt-dead-1';
    const refused = randomUUID();
    const plain = randomUUID();
    await deadLetterOnMain(ep, [
      {
        message: {
          messageId: refused,
          body: Buffer.from(eventBody('OrderPlaced', { orderId: 'o-1' })),
          applicationProperties: { [Prop.To]: ep, [Prop.From]: 'storefrontendpoint', [Prop.MessageType]: MessageType.SkipRequest, [Prop.EventId]: eventId, [Prop.EventTypeId]: 'OrderPlaced' },
        },
        reason: WireText.CommandRefused,
      },
      { message: { messageId: plain, body: Buffer.from('{}'), applicationProperties: { [Prop.To]: ep } }, reason: 'Foreign' },
    ]);
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
