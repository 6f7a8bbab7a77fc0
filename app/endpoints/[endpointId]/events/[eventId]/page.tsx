import type { Metadata } from 'next';
import { EventView } from '../../../../../components/EventView.tsx';
import { Prefetched } from '../../../../../components/prefetch.tsx';
import { endpointsQuery, eventQuery } from '../../../../../components/queries.ts';
import { readEndpoints, readEventDetails } from '../../../../../server/reads.ts';

type Props = { params: Promise<{ endpointId: string; eventId: string }> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const { endpointId, eventId } = await params;
  return { title: `${endpointId} · ${eventId}` };
}

export default async function EventPage({ params }: Props) {
  const { endpointId, eventId } = await params;
  // Details within the caller's read scope, exactly as GET /api/endpoints/{endpointId}/events/{eventId} answers.
  return (
    <Prefetched
      reads={[
        { key: eventQuery(endpointId, eventId).queryKey, read: (request) => readEventDetails(request, { endpointId, eventId }) },
        { key: endpointsQuery().queryKey, read: readEndpoints },
      ]}
    >
      <EventView endpointId={endpointId} eventId={eventId} />
    </Prefetched>
  );
}
