// One poll for the tests that wait on a positive signal (a job completed, a lease taken over, a row written): the
// condition is read again every `everyMs` until it holds, and the wait fails naming what it waited for once
// `timeoutMs` has passed. Nine test files had their own copy with slightly different defaults. The deadline only
// bounds a failing test; a passing one returns as soon as its condition holds.

export interface WaitForOptions {
  /** How long before the wait fails (default 180 s: generous for a loaded 2-core CI machine). */
  timeoutMs?: number;
  /** How often the condition is read (default 100 ms). */
  everyMs?: number;
  /** Read every 10 s while waiting and written to stderr, so a slow wait in CI shows where it is. */
  progress?: () => Promise<unknown>;
}

export async function waitFor(what: string, check: () => boolean | Promise<boolean>, options: WaitForOptions = {}): Promise<void> {
  const { timeoutMs = 180_000, everyMs = 100, progress } = options;
  const end = Date.now() + timeoutMs;
  let told = Date.now();
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    if (progress && Date.now() - told > 10_000) {
      told = Date.now();
      process.stderr.write(`waiting for ${what}: ${JSON.stringify(await progress())}\n`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
