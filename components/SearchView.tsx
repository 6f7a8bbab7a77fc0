'use client';
// Search results for an event id or session id prefix; a single match opens the event directly. A session id
// leads on to the endpoint's list of that session, where all of its events are (the search shows the newest 25,
// so a session's old failure, the one holding the others back, is often not among them).
import Link from './Link.tsx';
import { useRouter, useSearchParams } from 'next/navigation';
import { useEffect } from 'react';
import { useQuery } from '@tanstack/react-query';
import { endpointHref, eventHref } from './api.ts';
import { ErrorBox, StatusBadge, Timestamp } from './format.tsx';
import { TABLE_HEAD } from './table.tsx';
import { searchQuery } from './queries.ts';
import { searchCutNotice } from './searchNotice.ts';
import { sessionListLink } from './searchLinks.ts';
import { parseSearch, searchSearch, type EventListSearch } from './urlState.ts';

/**
 * The session's failures on an endpoint: the list is newest first, so unfiltered its oldest failure (the one holding
 * the later events back) sits below every event parked behind it; filtered to the failed statuses it is on top.
 */
const SESSION_FAILURES: EventListSearch['status'] = ['Failed', 'DeadLettered', 'Unsupported'];

export function SearchView() {
  const q = parseSearch(searchSearch, useSearchParams()).q;
  const router = useRouter();
  const r = useQuery(searchQuery(q));
  const items = r.data?.items ?? [];
  const cutNotice = r.data ? searchCutNotice(r.data) : null;
  // An exact event id that names one event opens it; anything else lists the matches.
  const exact = items.filter((i) => i.eventId.toLowerCase() === q.toLowerCase());
  const only = exact.length === 1 ? exact[0] : undefined;
  // A session named exactly whose list was cut: where to see all of it, on each endpoint it was seen on.
  const session = items.find((i) => i.sessionId.toLowerCase() === q.toLowerCase())?.sessionId;
  const sessionEndpoints = session && r.data?.truncated.bySessionId ? [...new Set(items.filter((i) => i.sessionId === session).map((i) => i.endpointId))].sort() : [];
  // The session named by the (trimmed) query is never spaces alone, so each endpoint gets its link.
  const failureLinks = sessionEndpoints.flatMap((e) => {
    const href = sessionListLink(e, session!, SESSION_FAILURES)?.href;
    return href ? [{ endpointId: e, href }] : [];
  });
  useEffect(() => {
    if (only) router.replace(eventHref(only.endpointId, only.eventId));
  }, [only, router]);
  return (
    <section>
      <h1 className="mb-3 text-xl font-semibold">
        Search <span className="font-mono text-base text-slate-600">{q}</span>
      </h1>
      <ErrorBox error={r.error} />
      {r.isFetching ? <p className="text-sm text-slate-500">Searching…</p> : null}
      {/* Not when a list was stopped by the page cap: nothing in the pages read is not "nothing starts with q". */}
      {r.data && items.length === 0 && !cutNotice ? <p className="text-sm text-slate-500">No event or session id starts with “{q}”.</p> : null}
      {cutNotice ? (
        <p role="status" className="mb-2 text-sm text-amber-800" data-testid="search-truncated">
          {cutNotice}
        </p>
      ) : null}
      {failureLinks.length > 0 ? (
        <p className="mb-2 text-sm" data-testid="search-session-links">
          The failures of session <span className="font-mono">{session}</span>, its oldest included, on{' '}
          {failureLinks.map(({ endpointId: e, href }, n) => (
            <span key={e}>
              {n > 0 ? ' · ' : null}
              <Link href={href} className="text-sky-700 underline">
                {e}
              </Link>
            </span>
          ))}
        </p>
      ) : null}
      {items.length > 0 ? (
        <div className="overflow-x-auto">
        <table className="min-w-full rounded border border-slate-200 bg-white text-sm">
          <thead className={TABLE_HEAD}>
            <tr>
              <th scope="col" className="px-2 py-2">Status</th>
              <th scope="col" className="px-2 py-2">Endpoint</th>
              <th scope="col" className="px-2 py-2">Event id</th>
              <th scope="col" className="px-2 py-2">Session</th>
              <th scope="col" className="px-2 py-2">Type</th>
              <th scope="col" className="px-2 py-2">Updated</th>
            </tr>
          </thead>
          <tbody className="divide-y divide-slate-100">
            {items.map((i) => (
              <tr key={`${i.endpointId}/${i.eventId}/${i.sessionId}`}>
                <td className="px-2 py-1">
                  <StatusBadge status={i.status} subStatus={i.subStatus} />
                </td>
                <td className="px-2 py-1">
                  <Link href={endpointHref(i.endpointId)} className="hover:underline">
                    {i.endpointId}
                  </Link>
                </td>
                <td className="px-2 py-1 font-mono text-xs">
                  <Link href={eventHref(i.endpointId, i.eventId)} className="text-sky-700 hover:underline">
                    {i.eventId}
                  </Link>
                </td>
                <td className="px-2 py-1 font-mono text-xs">
                  <SessionCell endpointId={i.endpointId} sessionId={i.sessionId} />
                </td>
                <td className="px-2 py-1">{i.eventTypeId}</td>
                <td className="px-2 py-1">
                  <Timestamp at={i.updatedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        </div>
      ) : null}
    </section>
  );
}

/**
 * A result's session: a link to the endpoint's list of exactly that session, nothing for an event outside any
 * session, and for one the list cannot filter on (spaces alone) the id quoted, its spaces kept, with the reason.
 */
function SessionCell({ endpointId, sessionId }: { endpointId: string; sessionId: string }) {
  const link = sessionListLink(endpointId, sessionId);
  if (!link) return null;
  if (link.href === undefined)
    return (
      <span data-testid="search-session-unlinked" title={`No session list on ${endpointId}: ${link.refused}`}>
        <span className="whitespace-pre">“{sessionId}”</span> <span className="font-sans text-slate-500">({link.refused})</span>
      </span>
    );
  return (
    <Link href={link.href} className="text-sky-700 hover:underline" title={`Every event of session ${sessionId} on ${endpointId}`}>
      {sessionId}
    </Link>
  );
}
