import type { Metadata } from 'next';
import { Prefetched } from '../../../../../components/prefetch.tsx';
import { DEAD_LETTER_PAGE_SIZE, deadLettersQuery } from '../../../../../components/queries.ts';
import { DeadLettersView } from '../../../../../components/topology/DeadLettersView.tsx';
import { deadLettersSearch, parseSearch, type RawSearch } from '../../../../../components/urlState.ts';
import { readDeadLetters } from '../../../../../server/reads.ts';

type Props = { params: Promise<{ topic: string; subscription: string }>; searchParams: Promise<RawSearch> };

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const { topic, subscription } = await params;
  return { title: `${decodeURIComponent(topic)}/${decodeURIComponent(subscription)} · Dead letters` };
}

export default async function DeadLettersPage({ params, searchParams }: Props) {
  const p = await params;
  const topic = decodeURIComponent(p.topic);
  const subscription = decodeURIComponent(p.subscription);
  // The page the view will show (reason filter and paging position from the URL), read with the caller's rights.
  const { reason, from } = parseSearch(deadLettersSearch, await searchParams);
  const query: Record<string, string> = { pageSize: String(DEAD_LETTER_PAGE_SIZE), ...(reason ? { reason } : {}), ...(from ? { from } : {}) };
  return (
    <Prefetched reads={[{ key: deadLettersQuery(topic, subscription, reason, from).queryKey, read: (request) => readDeadLetters(request, { topic, subscription }, query) }]}>
      <DeadLettersView topic={topic} subscription={subscription} />
    </Prefetched>
  );
}
