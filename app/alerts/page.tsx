import type { Metadata } from 'next';
import { AlertHistoryView } from '../../components/AlertHistoryView.tsx';
import { Prefetched } from '../../components/prefetch.tsx';
import { alertHistoryQuery } from '../../components/queries.ts';
import { alertHistorySearch, parseSearch, type RawSearch } from '../../components/urlState.ts';
import { readAlertHistory } from '../../server/reads.ts';

export const metadata: Metadata = { title: 'Alerts' };

export default async function AlertsPage({ searchParams }: { searchParams: Promise<RawSearch> }) {
  // As many of the newest alerts as the URL's "Show more" position asks for.
  const { limit } = parseSearch(alertHistorySearch, await searchParams);
  return (
    <Prefetched reads={[{ key: alertHistoryQuery(limit).queryKey, read: (request) => readAlertHistory(request, { limit: String(limit) }) }]}>
      <AlertHistoryView />
    </Prefetched>
  );
}
