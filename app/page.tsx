import type { Metadata } from 'next';
import { EndpointsView } from '../components/EndpointsView.tsx';
import { Prefetched } from '../components/prefetch.tsx';
import { endpointsQuery } from '../components/queries.ts';
import { readEndpoints } from '../server/reads.ts';

// The root layout's title template applies to the segments below it, not to its own page: spelled out here.
export const metadata: Metadata = { title: { absolute: 'NimBus · Endpoints' } };

export default function EndpointsPage() {
  // The counts are in the first HTML: the overview is read here, with the caller's rights, and handed over.
  return (
    <Prefetched reads={[{ key: endpointsQuery().queryKey, read: readEndpoints }]}>
      <EndpointsView />
    </Prefetched>
  );
}
