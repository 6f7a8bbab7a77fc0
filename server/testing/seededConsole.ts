// The one setup of the console's browser tests: the built console (`next build` only when the sources changed),
// started in this process on the embedded Service Bus emulator and Cosmos server (server/testing/stack.ts, real
// clients) with the demo rows of seed.ts, and Debian's Chromium (chromium.ts). What the tests really do
// differently is an option: their own database, rows or workers (`prepare`), variables, sealed-cookie sign-in
// with a role map, no browser at all.
//
// Teardown is one call, safe to make from `after` in every state: everything is stopped in the reverse order it
// was started (Chromium, the console, the console's in-process operations services, what `prepare` started, the
// stack), each step even when an earlier one failed. A setup that fails halfway stops what it had started itself
// before it rethrows, so `after(() => ui?.close())` is all a test needs.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import type { Principal } from '../auth/principal.ts';
import { SESSION_COOKIE, sealSession } from '../auth/session.ts';
import { ensureConsoleBuilt } from '../build.ts';
import { CONSOLE_DIR, startConsole, type RunningConsole } from '../console.ts';
import { launchTestChromium } from './chromium.ts';
import { oidcTestEnv } from './oidcEnv.ts';
import { seedConsoleData } from './seed.ts';
import { startConsoleTestStack, type ConsoleTestStack } from './stack.ts';

export type DemoRows = Awaited<ReturnType<typeof seedConsoleData>>;

type Close = () => Promise<unknown> | unknown;

export interface PrepareContext {
  stack: ConsoleTestStack;
  /** The time the demo rows were written at (a minute before the start), for rows that belong with them. */
  base: number;
  /** The demo rows, when `demoData` is on. */
  demo?: DemoRows;
  /** Stops what `prepare` started: after the console, before the stack (last registered, first stopped). */
  defer(close: Close): void;
}

export interface SeededConsoleOptions {
  /** The stack's Cosmos database (default `nimbus`). */
  database?: string;
  /** The console to build and start (default this repository). */
  dir?: string;
  /** The demo rows of seed.ts (default true). */
  demoData?: boolean;
  /** After the demo rows, before the console starts: the test's own rows, broker state or workers. */
  prepare?: (ctx: PrepareContext) => Promise<void>;
  /** Variables for the console over the stack's and the sign-in ones; `undefined` removes one. */
  env?: Record<string, string | undefined>;
  /**
   * Sign-in on (oidcTestEnv: OIDC with an issuer nobody calls): callers are made by sealing session cookies with
   * this secret (`sessionCookie`, `signIn`), their roles and groups mapped by `roleMap`.
   */
  auth?: { sessionSecret: string; roleMap?: { roles?: Record<string, string>; groups?: Record<string, string> } };
  /** Launch Chromium (default true); off for tests that only fetch. */
  browser?: boolean;
  /** Browser permissions granted to the console's origin (e.g. `clipboard-read`). */
  permissions?: string[];
  /** A folder under test-artifacts/ for screenshots, created at the start. */
  artifacts?: string;
}

export interface SeededConsole {
  stack: ConsoleTestStack;
  app: RunningConsole;
  /** The console's base URL, `http://127.0.0.1:<port>`. */
  url: string;
  /** Chromium's context (a fresh profile); throws when started with `browser: false`. */
  readonly browser: BrowserContext;
  demo?: DemoRows;
  /** The screenshot folder of `artifacts` (the test-artifacts folder itself without it). */
  artifacts: string;
  /** Whether this start had to build the console, and how long the check (and build) took. */
  build: { built: boolean; seconds: number };
  /** Console errors and uncaught errors of the pages `open` opened, as `path: message (resource)`. */
  consoleErrors: string[];
  /** Uncaught errors alone of the pages `open` opened, as `path: message`. */
  pageErrors: string[];
  /** A new page at `path`, hydrated, its errors recorded in consoleErrors and pageErrors. */
  open(path: string): Promise<Page>;
  /** A `Cookie` header value that signs `principal` in (needs `auth`). */
  sessionCookie(principal: Principal): string;
  /** Signs the browser in as `principal`: its session cookie for the console's origin (needs `auth`). */
  signIn(principal: Principal): Promise<void>;
  /** Stops everything started, in reverse order; idempotent. */
  close(): Promise<void>;
}

/** Sealed session cookies live as long as the longest test could need them. */
const SESSION_SECONDS = 600;

export async function startSeededConsole(options: SeededConsoleOptions = {}): Promise<SeededConsole> {
  const dir = options.dir ?? CONSOLE_DIR;
  const closers: Close[] = [];
  const defer = (close: Close) => void closers.push(close);
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const failures: unknown[] = [];
      while (closers.length > 0) {
        try {
          await closers.pop()!();
        } catch (err) {
          failures.push(err);
        }
      }
      if (failures.length === 1) throw failures[0];
      if (failures.length > 1) throw new AggregateError(failures, 'the console test setup did not stop cleanly');
    })());

  try {
    const started = Date.now();
    const built = await ensureConsoleBuilt(dir);
    const build = { built, seconds: (Date.now() - started) / 1000 };
    const artifacts = join(dir, 'test-artifacts', options.artifacts ?? '');
    if (options.artifacts !== undefined) mkdirSync(artifacts, { recursive: true });

    const stack = await startConsoleTestStack(options.database);
    defer(() => stack.close());
    const base = Date.now() - 60_000;
    const demo = options.demoData === false ? undefined : await seedConsoleData(stack.store, base);
    await options.prepare?.({ stack, base, demo, defer });

    // The console runs the operations services in this process (operations runner, heartbeat, replays), on the
    // stack's connections: they stop after the console and before the stack.
    defer(async () => (await import('../heartbeat/services.ts')).closeOpsServices());
    const auth = options.auth;
    const app = await startConsole({
      port: 0,
      hostname: '127.0.0.1',
      dir,
      env: { ...stack.env, ...(auth ? oidcTestEnv(auth.sessionSecret, auth.roleMap) : {}), ...options.env },
    });
    defer(() => app.close());

    let context: BrowserContext | undefined;
    if (options.browser !== false) {
      const chromium = await launchTestChromium();
      defer(() => chromium.close());
      context = chromium.context;
      if (options.permissions) await context.grantPermissions(options.permissions, { origin: app.url });
    }
    const browserOf = (): BrowserContext => {
      if (!context) throw new Error('this console test was started with browser: false');
      return context;
    };

    const consoleErrors: string[] = [];
    const pageErrors: string[] = [];
    const sessionCookie = (principal: Principal) => {
      if (!auth) throw new Error('sign-in needs the auth option of startSeededConsole');
      return sealSession(principal, { secret: auth.sessionSecret, maxAgeSeconds: SESSION_SECONDS });
    };
    return {
      stack,
      app,
      url: app.url,
      get browser() {
        return browserOf();
      },
      demo,
      artifacts,
      build,
      consoleErrors,
      pageErrors,
      async open(path) {
        const page = await browserOf().newPage();
        page.on('console', (m) => {
          // The resource's URL too: "Failed to load resource" alone does not say which one.
          if (m.type() === 'error') consoleErrors.push(`${path}: ${m.text()}${m.location().url ? ` (${m.location().url})` : ''}`);
        });
        page.on('pageerror', (e) => {
          consoleErrors.push(`${path}: ${e.message}`);
          pageErrors.push(`${path}: ${e.message}`);
        });
        await page.goto(app.url + path);
        // Hydrated (components/Providers.tsx): the load event can come before React has attached its handlers,
        // and a click on a control in between is lost.
        await page.locator('html[data-hydrated]').waitFor({ state: 'attached' });
        return page;
      },
      sessionCookie: (principal) => `${SESSION_COOKIE}=${sessionCookie(principal)}`,
      async signIn(principal) {
        await browserOf().addCookies([{ name: SESSION_COOKIE, value: sessionCookie(principal), url: app.url }]);
      },
      close,
    };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}

/**
 * Loads each path once in a fresh page, to network idle, and returns what the pages logged as console errors and
 * uncaught errors (each prefixed with its path). A hydration mismatch between the server's HTML and the browser's
 * first render shows up here, so the "hydrate without errors" tests assert an empty list.
 *
 * `clockOffsetMs` runs the page's clock (Date, timers; Playwright's page.clock) that far from this machine's, still
 * ticking: a browser whose clock disagrees with the server's, or one that hydrates that long after the server
 * rendered (a loaded machine), deterministically instead of by chance.
 */
export async function errorsLoading(
  browser: BrowserContext,
  base: string,
  paths: readonly string[],
  options: { clockOffsetMs?: number } = {},
): Promise<string[]> {
  const errors: string[] = [];
  for (const path of paths) {
    const page = await browser.newPage();
    if (options.clockOffsetMs) await page.clock.install({ time: Date.now() + options.clockOffsetMs });
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`${path}: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`${path}: ${e.message}`));
    await page.goto(base + path, { waitUntil: 'networkidle' });
    await page.close();
  }
  return errors;
}
