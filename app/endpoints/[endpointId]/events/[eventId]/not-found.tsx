'use client';
// An event its endpoint does not know (the page's read answered 404: components/prefetch.tsx): answered 404, and
// still with the breadcrumb back to the endpoint. A not-found view gets no params: they are read from the route.
import { useParams } from 'next/navigation';
import { EventNotFound } from '../../../../../components/EventView.tsx';

export default function UnknownEvent() {
  const { endpointId, eventId } = useParams<{ endpointId: string; eventId: string }>();
  return <EventNotFound endpointId={decodeURIComponent(endpointId)} eventId={decodeURIComponent(eventId)} />;
}
