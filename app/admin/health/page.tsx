import type { Metadata } from 'next';
import { HealthView } from '../../../components/admin/HealthView.tsx';
import { Prefetched } from '../../../components/prefetch.tsx';
import { healthQuery } from '../../../components/queries.ts';
import { readHealth } from '../../../server/reads.ts';

export const metadata: Metadata = { title: 'Admin · Health' };

export default function HealthPage() {
  return (
    <Prefetched reads={[{ key: healthQuery().queryKey, read: readHealth }]}>
      <HealthView />
    </Prefetched>
  );
}
