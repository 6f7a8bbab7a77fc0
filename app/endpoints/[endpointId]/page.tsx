import type { Metadata } from 'next';
import { EndpointEventsView } from '../../../components/EndpointEventsView.tsx';
import { Prefetched } from '../../../components/prefetch.tsx';
import { endpointQuery, eventsQuery } from '../../../components/queries.ts';
import { eventListSearch, parseSearch, toSearch, type RawSearch } from '../../../components/urlState.ts';
import { readEndpoint, readEndpointEvents } from '../../../server/reads.ts';

type Props = { params: Promise<{ endpointId: string }>; searchParams: Promise<RawSearch> };

/** `NimBus · billingendpoint · Failed`: the endpoint and the statuses filtered on. */
export async function generateMetadata({ params, searchParams }: Props): Promise<Metadata> {
  const { endpointId } = await params;
  const { status } = parseSearch(eventListSearch, await searchParams);
  return { title: [endpointId, ...(status.length > 0 ? [status.join(', ')] : [])].join(' · ') };
}

export default async function EndpointPage({ params, searchParams }: Props) {
  const { endpointId } = await params;
  // The list as the view will ask for it: the same canonical query string, so the same query key.
  const queryString = toSearch(eventListSearch, parseSearch(eventListSearch, await searchParams));
  return (
    <Prefetched
      reads={[
        // The endpoint's own counts, not the whole overview (server/queries.ts endpointSummary says why).
        { key: endpointQuery(endpointId).queryKey, read: (request) => readEndpoint(request, { endpointId }) },
        {
          key: eventsQuery(endpointId, queryString).queryKey,
          read: (request) => readEndpointEvents(request, { endpointId }, Object.fromEntries(new URLSearchParams(queryString))),
          infinite: true,
        },
      ]}
    >
      <EndpointEventsView endpointId={endpointId} />
    </Prefetched>
  );
}
