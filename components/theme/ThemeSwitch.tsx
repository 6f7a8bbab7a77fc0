'use client';
// The header's theme switch: System / Light / Dark as one labelled select (a native control: keyboard and screen
// readers need nothing more).
import { setThemeChoice, THEME_CHOICES, useThemeChoice, type ThemeChoice } from './theme.ts';

const LABEL: Record<ThemeChoice, string> = { system: 'System', light: 'Light', dark: 'Dark' };

export function ThemeSwitch() {
  const choice = useThemeChoice();
  return (
    <label className="flex items-center gap-1 text-xs text-slate-300">
      Theme
      <select
        value={choice}
        onChange={(e) => setThemeChoice(e.target.value as ThemeChoice)}
        data-testid="theme-switch"
        className="rounded border border-slate-600 bg-slate-800 px-1 py-0.5 text-xs text-slate-100"
      >
        {THEME_CHOICES.map((c) => (
          <option key={c} value={c}>
            {LABEL[c]}
          </option>
        ))}
      </select>
    </label>
  );
}
