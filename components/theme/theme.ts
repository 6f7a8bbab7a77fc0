'use client';
// The viewer's theme: "system" (follow prefers-color-scheme, the default), "light" or "dark", kept in a cookie (the
// server writes it into the inline script of themeScript.ts, which applies it before the first paint) and mirrored
// in local storage, whose `storage` event tells the other tabs. Applying it is one class on <html> (`dark`), which
// app/theme.css turns into the dark palette.
import { useSyncExternalStore } from 'react';
import { parseThemeChoice, THEME_KEY, type ThemeChoice } from './themeScript.ts';

export type { ThemeChoice };
export const THEME_CHOICES: readonly ThemeChoice[] = ['system', 'light', 'dark'];
const EVENT = 'nimbus:theme';
const DARK_QUERY = '(prefers-color-scheme: dark)';

/** The cookie's value, or null when there is none. */
function cookieChoice(): ThemeChoice | null {
  const entry = document.cookie.split('; ').find((c) => c.startsWith(`${THEME_KEY}=`));
  return entry === undefined ? null : parseThemeChoice(entry.slice(THEME_KEY.length + 1));
}

/** A choice stored in local storage only: the console kept it there before the cookie. */
function storedChoice(): ThemeChoice {
  try {
    return parseThemeChoice(window.localStorage.getItem(THEME_KEY));
  } catch {
    return 'system';
  }
}

export function readThemeChoice(): ThemeChoice {
  return cookieChoice() ?? storedChoice();
}

/** Writes the choice's cookie ("system" removes it); about a year, the same for every page of the console. */
function writeCookie(choice: ThemeChoice): void {
  const secure = window.location.protocol === 'https:' ? '; Secure' : '';
  document.cookie =
    choice === 'system'
      ? `${THEME_KEY}=; Path=/; Max-Age=0; SameSite=Lax${secure}`
      : `${THEME_KEY}=${choice}; Path=/; Max-Age=31536000; SameSite=Lax${secure}`;
}

/** Puts the `dark` class on <html> for a choice (for "system", what the system prefers now). */
export function applyTheme(choice: ThemeChoice): void {
  const dark = choice === 'dark' || (choice === 'system' && window.matchMedia(DARK_QUERY).matches);
  const root = document.documentElement;
  root.classList.toggle('dark', dark);
  root.setAttribute('data-theme', choice);
}

function subscribe(onChange: () => void): () => void {
  // The system's preference can change while the page is open (a scheduled dark mode): "system" follows it.
  const media = window.matchMedia(DARK_QUERY);
  // A choice kept only in local storage (from before the cookie) becomes a cookie, so the next page has it at once.
  if (cookieChoice() === null && storedChoice() !== 'system') {
    writeCookie(storedChoice());
    applyTheme(storedChoice());
  }
  const reapply = () => {
    applyTheme(readThemeChoice());
    onChange();
  };
  window.addEventListener(EVENT, reapply);
  window.addEventListener('storage', reapply);
  media.addEventListener('change', reapply);
  return () => {
    window.removeEventListener(EVENT, reapply);
    window.removeEventListener('storage', reapply);
    media.removeEventListener('change', reapply);
  };
}

export function useThemeChoice(): ThemeChoice {
  return useSyncExternalStore(subscribe, readThemeChoice, () => 'system');
}

export function setThemeChoice(choice: ThemeChoice): void {
  writeCookie(choice);
  try {
    if (choice === 'system') window.localStorage.removeItem(THEME_KEY);
    else window.localStorage.setItem(THEME_KEY, choice);
  } catch {
    // Storage refused (private mode): the choice still applies to this page.
  }
  applyTheme(choice);
  window.dispatchEvent(new Event(EVENT));
}
