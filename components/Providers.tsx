'use client';
// Client-side providers: one TanStack Query client per browser tab.
import { QueryClient, QueryClientProvider, useIsFetching, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type ReactNode } from 'react';

/**
 * Marks <html data-fetching> while any of the page's data is being fetched, after React has drawn each change: once
 * the mark is gone (and <html data-hydrated> is there) the page shows what its data says. The browser tests wait
 * for that before they look at the page (axe in e2e/console-a11y.test.ts); a script or an extension can too.
 * Rendered after the page, so its first effect runs after the page's queries have started (useIsFetching's first
 * render is before they start, hence the client's own count too).
 */
function FetchingMark() {
  const client = useQueryClient();
  const fetching = useIsFetching();
  useEffect(() => {
    if (fetching > 0 || client.isFetching() > 0) document.documentElement.dataset.fetching = '';
    else delete document.documentElement.dataset.fetching;
  }, [client, fetching]);
  return null;
}

export function Providers({ children }: { children: ReactNode }) {
  const [client] = useState(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            // Operators look at live data: short staleness, but no refetch storm on every focus change.
            staleTime: 2_000,
            retry: 1,
            refetchOnWindowFocus: true,
          },
        },
      }),
  );
  // Marks the page as hydrated (<html data-hydrated>): until then a click on a button or a switch does nothing, since
  // the server's HTML has no handlers. The browser tests wait for it before they act; a script or an extension
  // can too.
  useEffect(() => {
    document.documentElement.dataset.hydrated = '';
  }, []);
  return (
    <QueryClientProvider client={client}>
      {children}
      <FetchingMark />
    </QueryClientProvider>
  );
}
