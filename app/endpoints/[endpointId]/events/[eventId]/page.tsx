import type { Metadata } from 'next';
import { EventView } from '../../../../../components/EventView.tsx';
import { Prefetched } from '../../../../../components/prefetch.tsx';
import { endpointQuery, eventQuery, meQuery } from '../../../../../components/queries.ts';
import { readEndpoint, readEventDetails, readMe } from '../../../../../server/reads.ts';

type Props = { params: Promise<{ endpointId: string; eventId: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const { endpointId, eventId } = await params;
  return { title: `${endpointId} · ${eventId}` };
}

export default async function EventPage({ params }: Props) {
  const { endpointId, eventId } = await params;
  // Details within the caller's read scope, exactly as GET /api/endpoints/{endpointId}/events/{eventId} answers;
  // and the caller's permissions (GET /api/me), so the Resubmit / Skip buttons and their `r` / `s` shortcuts are
  // there from the first render instead of appearing after a second round trip (a key pressed before did nothing).
  return (
    <Prefetched
      reads={[
        // An unknown event is a missing page: 404, with the breadcrumb back to its endpoint (./not-found.tsx).
        { key: eventQuery(endpointId, eventId).queryKey, read: (request) => readEventDetails(request, { endpointId, eventId }), pageSubject: true },
        { key: endpointQuery(endpointId).queryKey, read: (request) => readEndpoint(request, { endpointId }) },
        { key: meQuery().queryKey, read: readMe },
      ]}
    >
      <EventView endpointId={endpointId} eventId={eventId} />
    </Prefetched>
  );
}
