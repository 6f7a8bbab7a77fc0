'use client';
// "refreshing…" and the like: whether a query is fetching, as text, only once the page has hydrated.
//
// The server never fetches. TanStack Query's `isFetching` in the server's render is its guess that the browser
// will fetch on mount, made from the prefetched data's age by the server's clock (stale after the client's
// staleTime, 2 s, components/Providers.tsx); the browser guesses again when it hydrates, by its own clock. A
// loaded machine that hydrates more than 2 s after the server's read, or a browser whose clock runs ahead, finds
// the data stale: its first render says "refreshing…" where the server's HTML said "50 shown", and React
// refuses the hydration (#418, issue 20). Showing fetch state only after hydration makes both first renders
// say the same; the browser's real refetch on mount shows a moment later, as it always did.
import { useSyncExternalStore } from 'react';

const noSubscription = () => () => undefined;

/** False in the server's render and the browser's hydrating render, true in every render after. */
export function useHydrated(): boolean {
  return useSyncExternalStore(
    noSubscription,
    () => true,
    () => false,
  );
}

/** A query's `isFetching` for display: false until hydrated (see above), then the query's own. */
export function useRefreshing(query: { isFetching: boolean }): boolean {
  return useHydrated() && query.isFetching;
}
