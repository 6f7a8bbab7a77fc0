import { EventView } from '../../../../../components/EventView.tsx';

export default async function EventPage({ params }: { params: Promise<{ endpointId: string; eventId: string }> }) {
  const { endpointId, eventId } = await params;
  return <EventView endpointId={endpointId} eventId={eventId} />;
}
