'use client';
// The text filter of a list page whose filter lives in the URL as `q` (Endpoints, Subscriptions, Admin · Alerts,
// Alerts): one hook that keeps what is typed and writes it to the URL on every keystroke (`replace`, so typing
// is not a trail of history entries), and one box that shows it. The page filters its rows with `text` (what is
// typed, not the URL's trimmed copy, so the rows follow the box in the same render).
import { useUrlText } from './useUrlState.ts';

export interface UrlFilter {
  /** What the box holds now. */
  text: string;
  /** Takes a keystroke: keeps it in the box and writes it to the URL. */
  set: (v: string) => void;
}

export function useUrlFilter(urlValue: string, update: (next: { q: string }, how?: 'push' | 'replace') => void): UrlFilter {
  const [text, setText] = useUrlText(urlValue);
  const set = (v: string) => {
    setText(v);
    update({ q: v }, 'replace');
  };
  return { text, set };
}

/** `label` is the box's accessible name (it has no visible label: the placeholder says what it matches). */
export function UrlFilterBox({ filter, label, placeholder, alignEnd = false }: { filter: UrlFilter; label: string; placeholder: string; alignEnd?: boolean }) {
  return (
    <input
      aria-label={label}
      value={filter.text}
      onChange={(e) => filter.set(e.target.value)}
      placeholder={placeholder}
      className={`${alignEnd ? 'ml-auto ' : ''}w-64 rounded border border-slate-300 px-2 py-1 text-sm`}
    />
  );
}
