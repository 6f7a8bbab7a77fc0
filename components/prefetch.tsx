// Server side of the first paint: a page's server component reads its first queries here, with the signed-in
// caller, through the same functions the API routes answer with (server/reads.ts: same authorization, same read
// scope), and hands them to the client views through TanStack Query's HydrationBoundary under the keys of
// components/queries.ts. Counts and lists are then in the first HTML; the views refresh them as before. A read
// that is refused or fails is left out: the view fetches it itself and shows the error as it always did - except a
// 404 from the read of what the page is about (`pageSubject`: an unknown event), which makes the page a 404 too.
import type { ReactNode } from 'react';
import { headers } from 'next/headers';
import { notFound } from 'next/navigation';
import { describeError } from '../server/http.ts';
import { HydrationBoundary, QueryClient, dehydrate, type QueryKey } from '@tanstack/react-query';
import { currentViewer } from './auth/viewer.ts';

export interface Prefetch {
  key: QueryKey;
  /** The read, given the page's caller as a Request (server/reads.ts). */
  read: (request: Request) => Promise<unknown>;
  /** An infinite query (event lists): the answer becomes its first page. */
  infinite?: boolean;
  /**
   * The read of what the page is about (the event of the Event page): when it answers 404 the page is a missing
   * page, answered 404 with the segment's not-found view (notFound()), not a 200 that says "not found" inside.
   */
  pageSubject?: boolean;
}

/** The page's caller as the Request the route functions take: the page request's headers and host. */
export async function callerRequest(): Promise<Request> {
  const h = await headers();
  const host = h.get('host') ?? '127.0.0.1';
  return new Request(`http://${host}/`, { headers: new Headers(h) });
}

/** Runs the reads side by side; the answers (as JSON would carry them) seed the client's query cache. */
export async function prefetchState(reads: Prefetch[]) {
  const client = new QueryClient();
  // Nobody signed in: the layout sends the browser to sign-in; reading here would only add refusals to the audit.
  if ((await currentViewer()).principal !== null) {
    const request = await callerRequest();
    let missing = false;
    await Promise.all(
      reads.map(async (r) => {
        try {
          // Through JSON, so the cache holds exactly what the API would have answered (dates as strings).
          const data: unknown = JSON.parse(JSON.stringify(await r.read(request)));
          client.setQueryData(r.key, r.infinite ? { pages: [data], pageParams: [''] } : data);
        } catch (err) {
          // Refused or failed: the view's own fetch reports it. Unknown (404): the page itself is missing.
          if (r.pageSubject && describeError(err).status === 404) missing = true;
        }
      }),
    );
    // Before anything of the page is sent (no loading boundary above it), so the answer's status is still 404.
    if (missing) notFound();
  }
  return dehydrate(client);
}

/** Renders `children` with the reads already in the client's cache. */
export async function Prefetched({ reads, children }: { reads: Prefetch[]; children: ReactNode }) {
  return <HydrationBoundary state={await prefetchState(reads)}>{children}</HydrationBoundary>;
}
