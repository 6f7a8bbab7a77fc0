'use client';
// A page's URL state (its schema in urlState.ts) as React state, the one hook the list pages share: read it from
// useSearchParams, write it back with the history API (no server round trip), keep a text box's own value while
// the user types, and sort by a column in the URL. Back/Forward and a reload restore the state because the URL is
// the only place it lives; the text boxes follow when the URL changes under them.
import { useSearchParams } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { nextSort, type SortDirection, type SortState } from './table.tsx';
import { parseSearch, writeSearch, type SearchOf, type SearchSchema } from './urlState.ts';

export interface UrlState<S extends SearchSchema> {
  search: SearchOf<S>;
  /**
   * Merges `next` into the state the address bar holds now (not the last render's: two quick changes both
   * land) and writes it: `push` for a discrete choice Back should undo, `replace` for keystrokes.
   */
  update: (next: Partial<SearchOf<S>>, how?: 'push' | 'replace') => void;
}

export function useUrlState<S extends SearchSchema>(schema: S): UrlState<S> {
  const params = useSearchParams();
  const base = params.toString();
  // Back/Forward to an entry this page wrote itself: Next's router restores it, but its search params can keep the
  // value they had (seen in Chromium: Back to the page's first entry after a reload left the sort of the second).
  // Why (Next 16.4.6, traced with the RSC requests): an entry written with the history API keeps the rendered
  // search of the entry it was pushed from, so after a reload Back to it fetches that URL's server data; when Back
  // is pressed again while that fetch is still out (it answered after the second popstate), the router stays on
  // the previous entry's URL while the address bar shows the one before. Nothing of ours orders Next's fetches,
  // so the address bar is the truth then; it stands in until the router's search params change again.
  const baseRef = useRef(base);
  baseRef.current = base;
  const [popped, setPopped] = useState<{ search: string; base: string } | null>(null);
  useEffect(() => {
    const onPop = () => setPopped({ search: window.location.search, base: baseRef.current });
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);
  // Once the router's params move on, the stand-in is spent (it must not come back if they return to `base`).
  if (popped !== null && popped.base !== base) setPopped(null);
  const search = parseSearch(schema, popped !== null && popped.base === base ? new URLSearchParams(popped.search) : params);
  const update = (next: Partial<SearchOf<S>>, how: 'push' | 'replace' = 'push') =>
    writeSearch(schema, { ...parseSearch(schema, new URLSearchParams(window.location.search)), ...next }, how);
  return { search, update };
}

/**
 * A text box bound to a URL value: it keeps what is typed (so the caret never jumps and a trailing space survives
 * the URL's trimming) and takes the URL's value when that changes from elsewhere (Back, Forward, a link).
 */
export function useUrlText(urlValue: string): [string, (v: string) => void] {
  const [draft, setDraft] = useState(urlValue);
  const [seen, setSeen] = useState(urlValue);
  if (urlValue !== seen) {
    // Adjusting state while rendering (React's documented pattern for state derived from a changed prop).
    setSeen(urlValue);
    if (urlValue !== draft.trim()) setDraft(urlValue);
  }
  return [draft, setDraft];
}

/**
 * The sort of a table whose column and direction are in the URL (`sort` and `dir`, dir left out when it is the
 * column's natural one, so one order has one URL). `onSort` is a header click: the same column flips, another
 * starts in its natural direction; each is a history entry.
 */
export function useUrlSort<K extends string>(
  search: { sort: K; dir?: SortDirection },
  natural: Record<K, SortDirection>,
  update: (next: { sort: K; dir: SortDirection | undefined }, how?: 'push' | 'replace') => void,
): { sort: SortState<K>; onSort: (key: K) => void } {
  const sort: SortState<K> = { key: search.sort, dir: search.dir ?? natural[search.sort] };
  const onSort = (key: K) => {
    const n = nextSort(sort, key, natural[key]);
    update({ sort: n.key, dir: n.dir === natural[n.key] ? undefined : n.dir }, 'push');
  };
  return { sort, onSort };
}
