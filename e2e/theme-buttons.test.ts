// Disabled filled buttons (primary, danger, confirm) must look disabled in the light and the dark theme. The
// console's own stylesheet (app/globals.css through Tailwind, the PostCSS plugin the build uses) is compiled here
// and the buttons' real classes are rendered in Chromium, so no console build is needed. Before, a disabled button
// only got opacity: on the dark page the half-transparent light blue of "Replay selected (0)" (Topology →
// Subscriptions dead letters) still read as an enabled primary button.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import tailwind from '@tailwindcss/postcss';
import type { Page } from 'playwright-core';
import { CONSOLE_DIR } from '../server/console.ts';
import { launchTestChromium, type TestBrowser } from '../server/testing/chromium.ts';

/** The classes of the console's filled buttons, as the components write them. */
const BUTTONS = {
  primary: 'rounded bg-sky-600 px-3 py-1 text-sm font-medium text-white hover:bg-sky-700 disabled:opacity-50', // DeadLettersView
  danger:
    'rounded bg-red-600 px-3 py-1.5 text-sm font-medium text-white hover:bg-red-700 disabled:opacity-50', // TypedConfirmDialog
  confirm: 'rounded bg-emerald-600 px-3 py-1 text-sm text-white hover:bg-emerald-700 disabled:opacity-50', // EventView
};

let browser: TestBrowser;
let css: string;

/** PostCSS as the Tailwind plugin itself resolves it (postcss is not a dependency of the console of its own). */
type PostCss = (plugins: unknown[]) => {
  process(css: string, options: { from: string }): Promise<{ css: string }>;
};
const postcss = createRequire(createRequire(import.meta.url).resolve('@tailwindcss/postcss'))(
  'postcss',
) as PostCss;

before(async () => {
  const from = join(CONSOLE_DIR, 'app', 'globals.css');
  css = (await postcss([tailwind({ base: CONSOLE_DIR })]).process(readFileSync(from, 'utf8'), { from })).css;
  browser = await launchTestChromium();
});
after(async () => {
  await browser?.close();
});

/** A colour as the browser resolves it, in sRGB bytes (a canvas converts oklch() and the like). */
const RGB_OF = `(color) => {
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.fillStyle = color;
  ctx.fillRect(0, 0, 1, 1);
  return Array.from(ctx.getImageData(0, 0, 1, 1).data.slice(0, 3));
}`;

interface Look {
  background: number[];
  opacity: string;
}

async function look(page: Page, id: string): Promise<Look> {
  return page.evaluate(
    `((rgbOf) => { const s = getComputedStyle(document.getElementById(${JSON.stringify(id)})); return { background: rgbOf(s.backgroundColor), opacity: s.opacity }; })(${RGB_OF})`,
  );
}

/** How colourful an sRGB colour is (0 for a grey): a primary button's hue is far from 0, a neutral fill near it. */
const chroma = (rgb: number[]) => Math.max(...rgb) - Math.min(...rgb);

for (const theme of ['light', 'dark'] as const) {
  test(`${theme} theme: a disabled filled button loses its colour, not only some opacity`, async () => {
    const page = await browser.context.newPage();
    try {
      const buttons = Object.entries(BUTTONS)
        .map(
          ([name, cls]) =>
            `<button id="${name}-on" class="${cls}">On</button><button id="${name}-off" disabled class="${cls}">Replay selected (0)</button>`,
        )
        .join('');
      await page.setContent(
        `<!doctype html><html class="${theme === 'dark' ? 'dark' : ''}"><head><style>${css}</style></head><body class="bg-slate-50"><main class="bg-white p-4">${buttons}</main></body></html>`,
      );
      for (const name of Object.keys(BUTTONS)) {
        const on = await look(page, `${name}-on`);
        const off = await look(page, `${name}-off`);
        assert.ok(
          chroma(on.background) > 60,
          `${name}: the enabled button is coloured (${on.background.join(',')})`,
        );
        assert.notDeepEqual(
          off.background,
          on.background,
          `${name}: the disabled button has another fill than the enabled one`,
        );
        assert.ok(
          chroma(off.background) * 2 < chroma(on.background),
          `${name}: the disabled button's fill is neutral (${off.background.join(',')}), not the enabled hue (${on.background.join(',')})`,
        );
      }
    } finally {
      await page.close();
    }
  });
}
