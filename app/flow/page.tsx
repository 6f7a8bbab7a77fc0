import type { Metadata } from 'next';
import { FlowView } from '../../components/FlowView.tsx';
import { Prefetched } from '../../components/prefetch.tsx';
import { flowQuery } from '../../components/queries.ts';
import { flowSearch, parseSearch, type RawSearch } from '../../components/urlState.ts';
import { readFlow } from '../../server/reads.ts';

export const metadata: Metadata = { title: 'Flow' };

export default async function FlowPage({ searchParams }: { searchParams: Promise<RawSearch> }) {
  const { period, eventTypeId } = parseSearch(flowSearch, await searchParams);
  const query: Record<string, string> = { period: String(period), ...(eventTypeId ? { eventTypeId } : {}) };
  return (
    <Prefetched reads={[{ key: flowQuery(period, eventTypeId).queryKey, read: (request) => readFlow(request, query) }]}>
      <FlowView />
    </Prefetched>
  );
}
