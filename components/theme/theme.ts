'use client';
// The viewer's theme: "system" (follow prefers-color-scheme, the default), "light" or "dark", kept in local
// storage and shared by every tab. Applying it is one class on <html> (`dark`), which app/theme.css turns into the
// dark palette; the inline script of themeScript.ts does the same before the first paint.
import { useSyncExternalStore } from 'react';
import { THEME_KEY } from './themeScript.ts';

export type ThemeChoice = 'system' | 'light' | 'dark';
export const THEME_CHOICES: readonly ThemeChoice[] = ['system', 'light', 'dark'];
const EVENT = 'nimbus:theme';
const DARK_QUERY = '(prefers-color-scheme: dark)';

export function readThemeChoice(): ThemeChoice {
  try {
    const stored = window.localStorage.getItem(THEME_KEY);
    return stored === 'light' || stored === 'dark' ? stored : 'system';
  } catch {
    return 'system';
  }
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
  try {
    if (choice === 'system') window.localStorage.removeItem(THEME_KEY);
    else window.localStorage.setItem(THEME_KEY, choice);
  } catch {
    // Storage refused (private mode): the choice still applies to this page.
  }
  applyTheme(choice);
  window.dispatchEvent(new Event(EVENT));
}
