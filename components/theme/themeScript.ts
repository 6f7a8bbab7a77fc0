// The theme is chosen before the first paint. The viewer's choice travels in a cookie (`nimbus.theme`), so the
// server knows it and writes it into a tiny inline script in <head> (with the page's CSP nonce) that puts `dark` on
// <html> when the choice, or the system when the choice is "system", says dark. Without it a dark-mode viewer would
// see the light page flash until hydration.
// Why a cookie, not local storage read by the script: in a fresh renderer (a new tab of a page with COOP) the first
// `localStorage` or `document.cookie` access is a synchronous call to the browser process, 4-100 ms on a busy
// machine, and the inline script runs before the first frame; `matchMedia` costs well under 1 ms (docs/console.md,
// Performance). Kept in sync with theme.ts (same key and rule); e2e/theme-first-paint.test.ts holds it.

export const THEME_KEY = 'nimbus.theme';

export type ThemeChoice = 'system' | 'light' | 'dark';

/** The stored choice from the cookie's raw value: anything but "light" or "dark" is "system". */
export function parseThemeChoice(value: string | undefined | null): ThemeChoice {
  return value === 'light' || value === 'dark' ? value : 'system';
}

/**
 * The inline script for a choice. Only the three literals are ever written into it (never the cookie's text), and
 * it reads no storage: the class for "light" and "dark" is fixed, "system" asks matchMedia.
 */
export function themeScript(choice: ThemeChoice): string {
  const dark = choice === 'system' ? "window.matchMedia('(prefers-color-scheme: dark)').matches" : String(choice === 'dark');
  return `(function(){try{var e=document.documentElement;e.classList.toggle('dark',${dark});e.setAttribute('data-theme','${choice}');}catch(x){}})();`;
}
