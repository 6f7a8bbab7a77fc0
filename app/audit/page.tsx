import type { Metadata } from 'next';
import { AuditView } from '../../components/audit/AuditView.tsx';
import { Prefetched } from '../../components/prefetch.tsx';
import { auditQuery } from '../../components/queries.ts';
import { auditSearch, parseSearch, toSearch, type RawSearch } from '../../components/urlState.ts';
import { readAudit } from '../../server/reads.ts';

export const metadata: Metadata = { title: 'Audit' };

export default async function AuditPage({ searchParams }: { searchParams: Promise<RawSearch> }) {
  // The first page for the URL's filter: the same canonical query string the view asks with, so the same key.
  const queryString = toSearch(auditSearch, parseSearch(auditSearch, await searchParams));
  return (
    <Prefetched reads={[{ key: auditQuery(queryString).queryKey, read: (request) => readAudit(request, Object.fromEntries(new URLSearchParams(queryString))), infinite: true }]}>
      <AuditView />
    </Prefetched>
  );
}
