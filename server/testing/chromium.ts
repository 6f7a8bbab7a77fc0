// Debian's Chromium for the browser tests, started the one way that works on these machines: headless, no sandbox
// (we run as root), and without the background services whose connections the closed network refuses.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

const CHROMIUM = process.env.NIMBUS_CHROMIUM ?? '/usr/bin/chromium';

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh Chromium with an empty profile in a temporary folder, removed again by close(). */
export async function launchTestChromium(): Promise<TestBrowser> {
  const profileDir = mkdtempSync(join(tmpdir(), 'nimbus-chromium-'));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}
