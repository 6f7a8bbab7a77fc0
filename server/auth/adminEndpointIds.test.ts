// The admin forms that take an endpoint id, in Chromium (playwright-core) on the built console and the embedded
// stack (sign-in off: the local Owner): Admin → Access's grant form and Admin → Alerts' rule form take the id
// exactly as typed (server/exactIdFilters.ts, the rule for an id a command names). An id of spaces alone, one with a
// space around it or one longer than any is refused beside the box, in the route's words, announced (role=alert)
// and focused, and nothing is stored: before, the forms trimmed it, so spaces alone made a site-wide grant (or a
// rule on every endpoint) and " billingendpoint" was taken for billingendpoint. The id as typed is then stored.
// NIMBUS_CONSOLE_DIR may name another built copy of the console (default: this repository, built on demand).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { CONSOLE_DIR } from '../console.ts';
import { startSeededConsole, type SeededConsole } from '../testing/seededConsole.ts';

process.env.NIMBUS_LOG_LEVEL = 'silent';
const DIR = process.env.NIMBUS_CONSOLE_DIR ?? CONSOLE_DIR;
const EP = 'billingendpoint';

let ui: SeededConsole | undefined;

before(async () => {
  ui = await startSeededConsole({ database: 'adminendpointids', dir: DIR, demoData: false });
});

after(() => ui?.close());

/** The refusals to try, each with the words the route says it in. */
const REFUSED: Array<[typed: string, words: string]> = [
  ['   ', 'an endpoint id of spaces alone names nothing; ids are taken exactly as sent'],
  [` ${EP}`, 'an endpoint id is made of letters, digits, ".", "_" and "-" alone (no spaces): this one names no endpoint'],
  ['x'.repeat(51), 'an endpoint id longer than 50 characters names nothing; no endpoint id is that long'],
];

/** Submitting with `typed` in `box` is refused beside it, announced and focused. */
async function assertRefused(page: Page, form: Locator, box: Locator, submit: Locator, typed: string, words: string) {
  await box.fill(typed);
  await submit.click();
  const alert = form.getByRole('alert');
  await alert.filter({ hasText: words }).waitFor({ timeout: 15_000 });
  assert.equal(await box.getAttribute('aria-invalid'), 'true', JSON.stringify(typed));
  const described = await box.getAttribute('aria-describedby');
  assert.equal(await alert.getAttribute('id'), described, 'the box is described by its refusal');
  assert.equal(await box.evaluate((el) => el === el.ownerDocument.activeElement), true, `the refused box has the focus (${JSON.stringify(typed)})`);
  // Editing the box forgets the refusal.
  await box.press('End');
  await box.press('Backspace');
  await alert.waitFor({ state: 'detached' });
  assert.equal(await box.getAttribute('aria-invalid'), null);
}

const json = async <T,>(path: string): Promise<T> => (await (await fetch(ui!.url + path)).json()) as T;

describe('admin forms take endpoint ids exactly', () => {
  test('Access: a grant’s endpoint of spaces, with a space or too long is refused inline, never trimmed', { timeout: 300_000 }, async () => {
    const page = await ui!.open('/admin/access');
    const form = page.getByTestId('grant-form');
    await form.waitFor({ timeout: 60_000 });
    await form.getByLabel(/^Id/).fill('oid-exact');
    await form.getByLabel('Role').selectOption('Operator');
    const box = form.getByLabel('Endpoint (empty = site-wide)');
    const grant = form.getByRole('button', { name: 'Grant' });
    for (const [typed, words] of REFUSED) await assertRefused(page, form, box, grant, typed, words);
    const stored = async () => (await json<{ grants: Array<{ subject: string; endpointId: string | null }> }>('/api/admin/grants')).grants.filter((g) => g.subject === 'oid-exact');
    assert.deepEqual(await stored(), [], 'nothing was granted (spaces alone were a site-wide grant)');

    await box.fill(EP);
    await grant.click();
    await page.locator('tr[data-grant-id]').filter({ hasText: 'oid-exact' }).waitFor({ timeout: 30_000 });
    assert.deepEqual((await stored()).map((g) => g.endpointId), [EP]);
    assert.deepEqual(ui!.pageErrors, []);
  });

  test('Alerts: a rule’s endpoint of spaces, with a space or too long is refused inline, never trimmed', { timeout: 300_000 }, async () => {
    const page = await ui!.open('/admin/alerts');
    await page.getByRole('button', { name: 'New rule' }).click();
    const form = page.getByTestId('rule-form');
    await form.getByLabel('Name').fill('dead letters exact');
    await form.getByLabel('Rule').selectOption('deadLetterBacklog');
    await form.getByLabel('Dead letters above').fill('10');
    const box = form.getByLabel('Endpoint (empty: all)');
    const add = form.getByRole('button', { name: 'Add rule' });
    for (const [typed, words] of REFUSED) await assertRefused(page, form, box, add, typed, words);
    const stored = async () => (await json<{ rules: Array<{ name: string; endpointId: string | null }> }>('/api/admin/alerts/rules')).rules.filter((r) => r.name === 'dead letters exact');
    assert.deepEqual(await stored(), [], 'no rule was saved (spaces alone were a rule on every endpoint)');

    await box.fill(EP);
    await add.click();
    await page.locator(`tr[data-rule="dead letters exact"]`).waitFor({ timeout: 30_000 });
    assert.deepEqual((await stored()).map((r) => r.endpointId), [EP]);
    assert.deepEqual(ui!.pageErrors, []);
  });
});
