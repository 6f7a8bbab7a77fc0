import type { Metadata } from 'next';
import { Prefetched } from '../../../components/prefetch.tsx';
import { topologyQuery } from '../../../components/queries.ts';
import { SubscriptionsView } from '../../../components/topology/SubscriptionsView.tsx';
import { readTopology } from '../../../server/reads.ts';

export const metadata: Metadata = { title: 'Topology · Subscriptions' };

export default function SubscriptionsPage() {
  return (
    <Prefetched reads={[{ key: topologyQuery().queryKey, read: readTopology }]}>
      <SubscriptionsView />
    </Prefetched>
  );
}
