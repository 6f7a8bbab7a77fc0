'use client';
// Global search: an event id or a session id. Goes to the search page, which jumps straight to the event when
// exactly one matches.
import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useState, type FormEvent } from 'react';
import { parseSearch, searchSearch } from './urlState.ts';

/**
 * The query the search page shows, or null on any other page. The box lives in the layout, which survives
 * navigation: its own state alone would be empty on a search page opened directly (a new tab, a reload, a link)
 * and would keep the last typed text when Back or Forward moves between two searches.
 */
function useShownQuery(): string | null {
  const pathname = usePathname();
  const params = useSearchParams();
  return pathname === '/search' ? parseSearch(searchSearch, params).q : null;
}

export function GlobalSearch() {
  const router = useRouter();
  const shown = useShownQuery();
  const [text, setText] = useState(shown ?? '');
  // Takes the page's query when it changes (adjusting state while rendering, as useUrlText in useUrlState.ts):
  // what is typed stays until then. Off the search page the box keeps its text (the last search, or what is
  // being typed), as before.
  const [seen, setSeen] = useState(shown);
  if (shown !== seen) {
    setSeen(shown);
    if (shown !== null && shown !== text.trim()) setText(shown);
  }
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const q = text.trim();
    if (q) router.push(`/search?q=${encodeURIComponent(q)}`);
  };
  return (
    <form onSubmit={submit} role="search">
      <input
        aria-label="Search by event id or session id"
        value={text}
        onChange={(e) => setText(e.target.value)}
        placeholder="Event id or session id…"
        className="w-full rounded border md:w-72 border-slate-600 bg-slate-800 px-2 py-1 text-sm text-slate-100 placeholder:text-slate-400 focus:border-sky-400 focus:outline-none"
      />
    </form>
  );
}
