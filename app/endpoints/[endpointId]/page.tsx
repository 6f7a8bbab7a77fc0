import { Suspense } from 'react';
import { EndpointEventsView } from '../../../components/EndpointEventsView.tsx';

export default async function EndpointPage({ params }: { params: Promise<{ endpointId: string }> }) {
  const { endpointId } = await params;
  return (
    <Suspense fallback={<p className="text-sm text-slate-500">Loading…</p>}>
      <EndpointEventsView endpointId={endpointId} />
    </Suspense>
  );
}
