'use client';
// Client-side providers: one TanStack Query client per browser tab.
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { useEffect, useState, type ReactNode } from 'react';

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
  return <QueryClientProvider client={client}>{children}</QueryClientProvider>;
}
