// Browser test of the payload views on the event page (issue 20, "Payloads"): the built console against the
// embedded Service Bus emulator and Cosmos server (real clients), seeded rows, Debian's Chromium via playwright-core.
// JSON highlighting, folding and copy; a non-JSON body as plain text; the edit-and-resubmit editor's line/column
// errors and catalog-schema check blocking the send; a valid edit sent (and received from the broker) with its diff;
// a diff of two history entries; and aria-sort on a sortable table header.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { decodeBody, MessageType, type MessageType as MessageTypeT } from '@nimbus/sdk/contract';
import type { MessageStore } from '../lib/store/index.ts';
import { XSS_TEXT } from '../server/testing/seed.ts';
import { startSeededConsole, type SeededConsole } from '../server/testing/seededConsole.ts';
import type { ConsoleTestStack } from '../server/testing/stack.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';

let ui: SeededConsole | undefined;
let stack: ConsoleTestStack;
let consoleErrors: string[] = [];

const open = (path: string): Promise<Page> => ui!.open(path);

/** The few browser globals the page functions below use (this program has no DOM types). */
type Browser = {
  getComputedStyle(el: unknown): { color: string; textAlign: string; fontVariantNumeric: string };
  navigator: { clipboard: { readText(): Promise<string> } };
};

const shot = (page: Page, name: string) => page.screenshot({ path: join(ui!.artifacts, `${name}.png`), fullPage: true });

/** One message of an event as the Resolver records it (history entry and status row). */
async function record(
  store: MessageStore,
  e: { endpointId: string; eventId: string; sessionId: string; eventTypeId: string },
  type: MessageTypeT,
  messageId: string,
  at: number,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const request = type === MessageType.EventRequest || type === MessageType.ResubmissionRequest;
  const common = {
    ...e,
    messageId,
    messageType: type,
    parentMessageId: 'self',
    originatingMessageId: `${e.eventId}-req`,
    correlationId: `${e.eventId}-corr`,
    from: type === MessageType.EventRequest ? 'storefrontendpoint' : type === MessageType.ResubmissionRequest ? 'Manager' : e.endpointId,
    to: request ? e.endpointId : 'Resolver',
    enqueuedAt: new Date(at).toISOString(),
    ...extra,
  };
  await store.recordOutcome({ history: { ...common }, status: { ...common } });
}

const VALID_ORDER = {
  orderId: 'ORD-300',
  customerId: 'CUST-9',
  lines: [{ sku: 'MUG-BLUE', quantity: 2, unitPrice: 9.5 }],
  total: 19,
  currency: 'EUR',
  fixed: true,
};

const STORED_VALID = { orderId: 'ORD-600', customerId: 'CUST-6', lines: [{ sku: 'MUG-RED', quantity: 1, unitPrice: 8 }], total: 8, currency: 'EUR' };

before(async () => {
  ui = await startSeededConsole({
    artifacts: 'payload',
    permissions: ['clipboard-read', 'clipboard-write'],
    prepare: async ({ stack: { store }, base }) => {
      // A body the Resolver kept as raw text (it was not JSON), markup included.
      const raw = { endpointId: 'billingendpoint', eventId: 'evt-raw-1', sessionId: 'ORD-400', eventTypeId: 'OrderPlaced' };
      await record(store, raw, MessageType.EventRequest, 'evt-raw-1-req', base, { payload: `orderId=ORD-400 <b id="raw-bold">bold</b>` });
      await record(store, raw, MessageType.ErrorResponse, 'evt-raw-1-res', base + 1000, { errorText: 'not JSON' });
      // An event resubmitted once with a changed payload: two requests in its history to compare.
      const twice = { endpointId: 'billingendpoint', eventId: 'evt-twice-1', sessionId: 'ORD-500', eventTypeId: 'OrderPlaced' };
      await record(store, twice, MessageType.EventRequest, 'evt-twice-1-req', base, { payload: { orderId: 'ORD-500', total: 10, currency: 'EUR' } });
      await record(store, twice, MessageType.ErrorResponse, 'evt-twice-1-res', base + 1000, { errorText: 'total too low' });
      await record(store, twice, MessageType.ResubmissionRequest, 'evt-twice-1-resub', base + 2000, { payload: { orderId: 'ORD-500', total: 12.5, currency: 'EUR' } });
      await record(store, twice, MessageType.ErrorResponse, 'evt-twice-1-res2', base + 3000, { errorText: 'still too low' });
      // A failed event whose stored payload already passes the OrderPlaced schema (for "no changes").
      const valid = { endpointId: 'billingendpoint', eventId: 'evt-valid-1', sessionId: 'ORD-600', eventTypeId: 'OrderPlaced' };
      await record(store, valid, MessageType.EventRequest, 'evt-valid-1-req', base, { payload: STORED_VALID });
      await record(store, valid, MessageType.ErrorResponse, 'evt-valid-1-res', base + 1000, { errorText: 'ERP timeout' });
    },
  });
  ({ stack, consoleErrors } = ui);
});

after(() => ui?.close());

describe('payloads in Chromium', () => {
  test('a JSON body is highlighted and foldable, its markup inert, and Copy puts it on the clipboard', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-failed-1');
    const payload = page.getByTestId('payload');
    await payload.locator('.cm-editor').waitFor();
    assert.equal(await payload.getAttribute('data-format'), 'json');
    // Highlighting: a property name and a number each in their colour (the --payload-* variables of globals.css).
    const colourOf = (text: string) =>
      payload.locator('.cm-content span', { hasText: text }).first().evaluate((el) => (globalThis as unknown as Browser).getComputedStyle(el).color);
    assert.equal(await colourOf('"orderId"'), 'rgb(3, 105, 161)');
    assert.equal(await colourOf('42.5'), 'rgb(180, 83, 9)');
    // The payload's markup stayed text.
    assert.ok(((await payload.textContent()) ?? '').includes(JSON.stringify(XSS_TEXT).slice(1, -1)));
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    assert.equal(await payload.locator('img, script').count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss), undefined);
    // Fold the object: its members are hidden behind a placeholder.
    await payload.locator('.cm-foldGutter [title="Fold line"]').first().click();
    await payload.locator('.cm-foldPlaceholder').waitFor();
    assert.doesNotMatch((await payload.locator('.cm-content').textContent()) ?? '', /"total"/);

    await page.getByRole('button', { name: 'Copy', exact: true }).click();
    await page.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    const copied = await page.evaluate(() => (globalThis as unknown as Browser).navigator.clipboard.readText());
    assert.deepEqual(JSON.parse(copied), { orderId: 'ORD-200', total: 42.5, note: XSS_TEXT });
    await shot(page, 'payload-json');
    await page.close();
  });

  test('a body that is not JSON shows as plain text, escaped', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-raw-1');
    const payload = page.getByTestId('payload');
    await payload.locator('.cm-editor').waitFor();
    assert.equal(await payload.getAttribute('data-format'), 'text');
    assert.match((await payload.locator('.cm-content').textContent()) ?? '', /orderId=ORD-400 <b id="raw-bold">bold<\/b>/);
    assert.equal(await page.locator('#raw-bold').count(), 0, 'the markup was not rendered');
    await page.close();
  });

  test('invalid JSON is shown at its line and column and blocks the resubmit', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-dead-1');
    await page.getByRole('button', { name: 'Resubmit with changes' }).click();
    const editor = page.getByLabel('Edited payload (JSON)');
    await editor.waitFor();
    const send = page.getByRole('button', { name: 'Resubmit edited payload' });
    await editor.fill('{\n  "orderId": "ORD-300"\n  "total": 1\n}');
    const problems = page.getByTestId('edit-problems');
    await problems.filter({ hasText: /Line 3, column 3: Invalid JSON/ }).waitFor();
    assert.equal(await send.isDisabled(), true);
    // The editor underlines the place too (the linter runs on the same check).
    await page.locator('[data-testid="edit-diff"] .cm-lintRange-error').first().waitFor();
    await shot(page, 'edit-invalid-json');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await page.close();
  });

  test("a payload against its event type's catalog schema is refused before anything is sent", async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-dead-1');
    const posts: string[] = [];
    page.on('request', (r) => {
      if (r.method() === 'POST') posts.push(r.url());
    });
    await page.getByRole('button', { name: 'Resubmit with changes' }).click();
    const editor = page.getByLabel('Edited payload (JSON)');
    await editor.waitFor();
    await page.getByTestId('schema-note').filter({ hasText: 'Checked against the OrderPlaced JSON schema' }).waitFor();
    await editor.fill('{\n  "orderId": "ORD-300",\n  "total": "ten"\n}');
    const problems = page.getByTestId('edit-problems');
    await problems.filter({ hasText: 'customerId: required property is missing' }).waitFor();
    assert.match((await problems.textContent()) ?? '', /Line 3, column 3: total: Invalid input: expected number/);
    const send = page.getByRole('button', { name: 'Resubmit edited payload' });
    assert.equal(await send.isDisabled(), true);
    // Another event type, another schema: OrderCancelled has none, so the same JSON may go.
    await page.getByLabel('Event type').selectOption('OrderCancelled');
    await page.getByTestId('schema-note').filter({ hasText: 'OrderCancelled has no JSON schema' }).waitFor();
    await problems.getByText('Valid JSON', { exact: true }).waitFor();
    assert.equal(await send.isDisabled(), false);
    await page.getByLabel('Event type').selectOption('OrderPlaced');
    await problems.filter({ hasText: 'customerId: required property is missing' }).waitFor();
    assert.equal(await send.isDisabled(), true);
    await shot(page, 'edit-schema-invalid');
    assert.deepEqual(posts, [], 'nothing was sent');
    await page.keyboard.press('Escape');
    await page.close();
  });

  test('a valid edited payload is diffed against the stored one, resubmitted, and reaches the endpoint', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-dead-1');
    await page.getByRole('button', { name: 'Resubmit with changes' }).click();
    const editor = page.getByLabel('Edited payload (JSON)');
    await editor.waitFor();
    await editor.fill(JSON.stringify(VALID_ORDER, null, 2));
    await page.getByTestId('edit-problems').getByText('Valid JSON', { exact: true }).waitFor();
    // The diff marks the change on the edited side (and what it replaced on the stored side).
    const diff = page.getByTestId('edit-diff');
    await diff.locator('.cm-merge-b .cm-changedLine', { hasText: '"fixed": true' }).waitFor();
    assert.ok((await diff.locator('.cm-merge-a .cm-changedLine').count()) > 0);
    await shot(page, 'edit-diff');
    await page.getByRole('button', { name: 'Resubmit edited payload' }).click();
    await page.getByRole('status').filter({ hasText: 'Edited resubmission sent' }).waitFor();
    await page.getByTestId('audits').filter({ hasText: 'ResubmitWithChanges' }).waitFor();
    await page.getByTestId('payload').locator('.cm-content', { hasText: '"fixed": true' }).waitFor();
    await page.close();

    const receiver = await stack.serviceBus.client.acceptSession('billingendpoint', 'billingendpoint', 'ORD-300');
    try {
      const got = await receiver.receiveMessages(5, { maxWaitTimeInMs: 5000 });
      assert.equal(got.length, 1);
      const body = decodeBody(got[0]!.body);
      assert.ok(body.ok);
      assert.deepEqual(JSON.parse(body.content.EventContent!.EventJson!), VALID_ORDER);
      for (const m of got) await receiver.completeMessage(m);
    } finally {
      await receiver.close();
    }
  });

  test('"Resubmit with changes" sends nothing until the payload differs from the stored one (layout and key order are no change)', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-valid-1');
    await page.getByRole('button', { name: 'Resubmit with changes' }).click();
    const editor = page.getByLabel('Edited payload (JSON)');
    await editor.waitFor();
    const problems = page.getByTestId('edit-problems');
    await page.getByTestId('schema-note').filter({ hasText: 'Checked against the OrderPlaced JSON schema' }).waitFor();
    await problems.filter({ hasText: 'matches the OrderPlaced schema' }).waitFor();
    const send = page.getByRole('button', { name: 'Resubmit edited payload' });
    const unchanged = page.getByTestId('edit-unchanged');
    // The stored payload as it opened: valid, but the same as a plain Resubmit.
    assert.equal(await send.isDisabled(), true, 'send is disabled for the stored payload');
    assert.match((await unchanged.textContent()) ?? '', /no changes/i);
    // The same JSON on one line with its keys in another order: still no change.
    const reordered = Object.fromEntries(Object.entries(STORED_VALID).reverse());
    await editor.fill(JSON.stringify(reordered));
    await problems.filter({ hasText: 'matches the OrderPlaced schema' }).waitFor();
    assert.equal(await send.isDisabled(), true, 'send is disabled for the same JSON laid out differently');
    assert.match((await unchanged.textContent()) ?? '', /no changes/i);
    // A real change: send is enabled and the hint goes.
    await editor.fill(JSON.stringify({ ...STORED_VALID, total: 9 }, null, 2));
    await unchanged.waitFor({ state: 'detached' });
    assert.equal(await send.isDisabled(), false);
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await page.close();
  });

  test('two payloads of the message history side by side', async () => {
    const page = await open('/endpoints/billingendpoint/events/evt-twice-1');
    const compare = page.getByTestId('history-diff');
    await compare.waitFor();
    assert.match(await compare.getByLabel('Compare payload of').inputValue(), /evt-twice-1-req/);
    assert.match(await compare.getByLabel('With payload of').inputValue(), /evt-twice-1-resub/);
    await compare.getByRole('button', { name: 'Compare payloads' }).click();
    const view = page.getByTestId('history-diff-view');
    // Changed lines on both sides (the marked text within is only the differing characters: "0" → "2.5").
    await view.locator('.cm-merge-b .cm-changedLine', { hasText: '"total": 12.5' }).waitFor();
    await view.locator('.cm-merge-a .cm-changedLine', { hasText: '"total": 10' }).waitFor();
    assert.equal(await view.locator('.cm-changedLine', { hasText: 'orderId' }).count(), 0, 'unchanged lines are not marked');
    await shot(page, 'history-diff');
    // The same entry on both sides: nothing to mark.
    await compare.getByLabel('With payload of').selectOption('evt-twice-1-req');
    await compare.getByText('The two payloads are identical.').waitFor();
    await page.close();
  });

  test('sortable headers say their order with aria-sort, and clicking flips it', async () => {
    const page = await open('/');
    const table = page.getByTestId('endpoints-table');
    await table.locator('tr[data-endpoint]').first().waitFor();
    const header = (name: string) => table.getByRole('columnheader', { name });
    assert.equal(await header('Failed').getAttribute('aria-sort'), 'descending', 'the default order');
    assert.equal(await header('Endpoint').getAttribute('aria-sort'), 'none');
    assert.equal(await header('Heartbeat').getAttribute('aria-sort'), null, 'not sortable: no aria-sort');
    // Numbers right-aligned with tabular figures.
    const style = await header('Pending').evaluate((el) => {
      const css = (globalThis as unknown as Browser).getComputedStyle(el);
      return [css.textAlign, css.fontVariantNumeric];
    });
    assert.deepEqual(style, ['right', 'tabular-nums']);

    const order = () => table.locator('tr[data-endpoint]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-endpoint')));
    await header('Endpoint').getByRole('button').click();
    assert.equal(await header('Endpoint').getAttribute('aria-sort'), 'ascending');
    assert.equal(await header('Failed').getAttribute('aria-sort'), 'none');
    const ascending = await order();
    assert.deepEqual(ascending, [...ascending].sort());
    await header('Endpoint').getByRole('button').click();
    assert.equal(await header('Endpoint').getAttribute('aria-sort'), 'descending');
    assert.deepEqual(await order(), [...ascending].reverse());
    await page.close();
  });

  test('no page logged a console error', () => {
    assert.deepEqual(consoleErrors, []);
  });
});
