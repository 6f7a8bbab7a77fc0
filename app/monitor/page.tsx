import type { Metadata } from 'next';
import { MonitorView } from '../../components/MonitorView.tsx';
import { Prefetched } from '../../components/prefetch.tsx';
import { endpointsQuery } from '../../components/queries.ts';
import { readEndpoints } from '../../server/reads.ts';

export const metadata: Metadata = { title: 'Monitor' };

export default function MonitorPage() {
  return (
    <Prefetched reads={[{ key: endpointsQuery().queryKey, read: readEndpoints }]}>
      <MonitorView />
    </Prefetched>
  );
}
