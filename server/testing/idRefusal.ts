// What "an id filter refused in the form" means in the browser tests, the one copy for every form that takes typed
// ids (components/exactIdErrors.tsx: the Endpoint page's Apply, the Audit log's Filter): the box is marked invalid,
// names the note beside it, which says the rule's words and is announced, has the focus, and nothing was applied.
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { until } from './pageWait.ts';

/** Types `typed` into `box`, submits with the button named `submit`, and checks the refusal in `words`. */
export async function assertIdRefused(page: Page, box: Locator, submit: string, typed: string, words: string): Promise<void> {
  const url = page.url();
  await box.fill(typed);
  await page.getByRole('button', { name: submit, exact: true }).click();
  await until(() => box.getAttribute('aria-invalid'), 'true', 'the box marked invalid', page);
  const describedBy = await box.getAttribute('aria-describedby');
  assert.ok(describedBy, 'the box names its error');
  const note = page.locator(`[id="${describedBy}"]`);
  assert.equal((await note.textContent())?.trim(), words);
  // role="alert": Enter in the box that has the focus moves nothing, so only an alert is announced.
  assert.equal(await note.getAttribute('role'), 'alert', 'the refusal is announced');
  assert.equal(await page.evaluate<string | null>("document.activeElement && document.activeElement.getAttribute('aria-describedby')"), describedBy, 'the box has the focus');
  assert.equal(page.url(), url, 'nothing applied: the URL is as it was');
  assert.equal(await box.inputValue(), typed, 'what was typed is left to correct');
}
