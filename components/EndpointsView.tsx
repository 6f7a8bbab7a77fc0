'use client';
// Endpoints (home): every catalog endpoint with Pending / Deferred / Failed counts, oldest failure, last activity
// and heartbeat; sortable, filterable, refreshed every few seconds. An endpoint whose counts cannot be read says so.
import Link from './Link.tsx';
import { useMemo } from 'react';
import { useQuery } from '@tanstack/react-query';
import { endpointHref, type EndpointOverview } from './api.ts';
import { EvidenceUnknown } from './EvidenceUnknown.tsx';
import { Ago, compareText, countOf, ErrorBox, formatCount, useNow } from './format.tsx';
import { comparator, NUMERIC_CELL, SortableTh, TABLE_HEAD, Th, type SortDirection } from './table.tsx';
import { endpointsQuery } from './queries.ts';
import { useRefreshing } from './refreshing.ts';
import { endpointsSearch, type EndpointsSearch } from './urlState.ts';
import { useUrlSort, useUrlState } from './useUrlState.ts';
import { UrlFilterBox, useUrlFilter } from './UrlFilterBox.tsx';

type SortKey = EndpointsSearch['sort'];

const byName = (a: EndpointOverview, b: EndpointOverview) => compareText(a.endpointId, b.endpointId);
/** Ascending orders; the headers flip them. */
const sorters: Record<SortKey, (a: EndpointOverview, b: EndpointOverview) => number> = {
  name: byName,
  failed: (a, b) => a.counts.failed - b.counts.failed,
  pending: (a, b) => a.counts.pending - b.counts.pending,
  deferred: (a, b) => a.counts.deferred - b.counts.deferred,
  activity: (a, b) => compareText(a.lastActivityAt ?? '', b.lastActivityAt ?? ''),
};
/** The direction a column starts in: names A→Z, counts and activity largest/newest first. */
const NATURAL: Record<SortKey, SortDirection> = { name: 'asc', failed: 'desc', pending: 'desc', deferred: 'desc', activity: 'desc' };

function Count({ n, href, tone, label }: { n: number; href: string; tone: string; label: string }) {
  if (n === 0) return <span className="text-slate-500">0</span>;
  return (
    <Link href={href} className={`font-semibold hover:underline ${tone}`} aria-label={`${n} ${label}`}>
      {formatCount(n)}
    </Link>
  );
}

const HEARTBEAT_STYLE: Record<string, string> = {
  On: 'text-emerald-700',
  Off: 'text-red-700',
  Pending: 'text-sky-700',
  Unknown: 'text-slate-500',
  Unsupported: 'text-slate-500',
};

export function EndpointsView() {
  const now = useNow(5000);
  // Filter, "only unhealthy" and sort live in the URL (shareable, kept on reload); the text box keeps its own
  // state while typing so the caret never jumps.
  const { search, update } = useUrlState(endpointsSearch);
  const filter = useUrlFilter(search.q, update);
  const { unhealthy: onlyUnhealthy } = search;
  const setOnlyUnhealthy = (v: boolean) => update({ unhealthy: v });
  const { sort, onSort } = useUrlSort(search, NATURAL, update);
  const q = useQuery(endpointsQuery());
  // Not q.isFetching itself: the server and a hydrating browser can disagree on it (refreshing.ts).
  const refreshing = useRefreshing(q);

  const rows = useMemo(() => {
    const list = q.data?.endpoints ?? [];
    const f = filter.text.trim().toLowerCase();
    return list
      .filter((e) => !f || e.endpointId.toLowerCase().includes(f) || (e.owner ?? '').toLowerCase().includes(f))
      .filter((e) => !onlyUnhealthy || e.counts.failed > 0 || e.counts.deferred > 0)
      .sort(comparator(sorters, sort, byName));
  }, [q.data, filter.text, onlyUnhealthy, sort]);

  const total = (q.data?.endpoints ?? []).reduce((s, e) => s + e.counts.failed, 0);
  const header = (key: SortKey, label: string, numeric = true) => (
    <SortableTh label={label} sortKey={key} sort={sort} onSort={onSort} numeric={numeric} className="px-3 py-2" />
  );

  return (
    <section>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold">Endpoints</h1>
        <span className={`rounded px-2 py-0.5 text-xs font-semibold ${total > 0 ? 'bg-red-100 text-red-800' : 'bg-emerald-100 text-emerald-800'}`}>
          {total > 0 ? countOf(total, 'failed event') : 'no failed events'}
        </span>
        <UrlFilterBox filter={filter} label="Filter endpoints" placeholder="Filter by endpoint or owner" alignEnd />
        <label className="flex items-center gap-1 text-sm text-slate-600">
          <input type="checkbox" checked={onlyUnhealthy} onChange={(e) => setOnlyUnhealthy(e.target.checked)} />
          Only with failed or deferred
        </label>
        {/* Relative to the clock of whoever rendered it: the server's text is replaced at the next tick. */}
        <span className="text-xs text-slate-500" aria-live="polite" suppressHydrationWarning>
          {refreshing ? 'refreshing…' : q.dataUpdatedAt ? `updated ${Math.max(0, Math.round((now - q.dataUpdatedAt) / 1000))}s ago` : ''}
        </span>
      </div>
      {q.error ? <ErrorBox error={q.error} /> : null}
      {q.isPending ? <p className="text-sm text-slate-500">Loading…</p> : null}
      {q.data ? (
        <div className="overflow-x-auto rounded border border-slate-200 bg-white">
          <table className="min-w-full text-sm" data-testid="endpoints-table">
            <thead className={TABLE_HEAD}>
              <tr>
                {header('name', 'Endpoint', false)}
                {header('pending', 'Pending')}
                {header('deferred', 'Deferred')}
                {header('failed', 'Failed')}
                <Th numeric className="px-3 py-2">
                  Oldest failure
                </Th>
                {header('activity', 'Last activity')}
                <Th className="px-3 py-2">Heartbeat</Th>
              </tr>
            </thead>
            <tbody className="divide-y divide-slate-100">
              {rows.map((e) => (
                <tr key={e.endpointId} className="hover:bg-slate-50" data-endpoint={e.endpointId}>
                  <td className="px-3 py-1.5">
                    <Link href={endpointHref(e.endpointId)} className="text-sky-700 hover:underline">
                      {e.endpointId}
                    </Link>
                    {e.owner ? <div className="text-xs text-slate-500">{e.owner}</div> : null}
                    {!e.inCatalog ? <div className="text-xs text-amber-700">not in the catalog</div> : null}
                    {/* Its zeros are not a quiet endpoint: the counter document exists but no longer parses (logged). */}
                    {e.countersUnreadable ? (
                      <div className="text-xs text-red-700" data-counters-unreadable>
                        counts unreadable: shown as 0
                      </div>
                    ) : null}
                  </td>
                  <td className={`px-3 py-1.5 ${NUMERIC_CELL}`}>
                    <Count n={e.counts.pending} href={endpointHref(e.endpointId, 'status=Pending')} tone="text-sky-700" label="pending" />
                    {e.counts.handoff > 0 ? <div className="text-xs text-amber-700">{e.counts.handoff} handoff</div> : null}
                  </td>
                  <td className={`px-3 py-1.5 ${NUMERIC_CELL}`}>
                    <Count n={e.counts.deferred} href={endpointHref(e.endpointId, 'status=Deferred')} tone="text-violet-700" label="deferred" />
                  </td>
                  {/* elementtiming: the browser records when the counts are first painted (Element Timing API; on the
                      cell, since Chromium attributes text to its block container, not to the link): what the console
                      benchmark reports as "counts painted" (bench/console.ts). */}
                  <td className={`px-3 py-1.5 ${NUMERIC_CELL}`} {...{ elementtiming: 'endpoint-counts' }}>
                    <Count n={e.counts.failed} href={endpointHref(e.endpointId, 'status=Failed,DeadLettered,Unsupported')} tone="text-red-700" label="failed" />
                    {e.counts.deadLettered + e.counts.unsupported > 0 ? (
                      <div className="text-xs text-slate-500">
                        {e.counts.deadLettered} DLQ · {e.counts.unsupported} unsupported
                      </div>
                    ) : null}
                  </td>
                  <td className={`px-3 py-1.5 text-slate-600 ${NUMERIC_CELL}`}>
                    <Ago at={e.oldestFailureAt} now={now} />
                  </td>
                  <td className={`px-3 py-1.5 text-slate-600 ${NUMERIC_CELL}`}>
                    <Ago at={e.lastActivityAt} now={now} />
                  </td>
                  {/* The last settled status, as Admin → Health shows it; "busy" while the probe waits behind the
                      endpoint's backlog and it keeps answering other messages (not dead, not yet answered). */}
                  <td className={`px-3 py-1.5 ${HEARTBEAT_STYLE[e.heartbeat.status] ?? ''}`} data-heartbeat-status={e.heartbeat.status}>
                    {e.heartbeat.status}
                    {e.heartbeat.busy ? (
                      <>
                        {' '}
                        <span className="text-xs text-amber-700" data-heartbeat-busy title={`Probe queued behind ${e.counts.pending} pending messages; the endpoint keeps answering`}>
                          · busy
                        </span>
                      </>
                    ) : null}
                    {/* The status above is the last settled one, unchecked: the busy check could not read the store. */}
                    {e.heartbeat.evidenceUnknown ? <EvidenceUnknown /> : null}
                  </td>
                </tr>
              ))}
              {rows.length === 0 ? (
                <tr>
                  <td colSpan={7} className="px-3 py-4 text-center text-slate-500">
                    No endpoint matches.
                  </td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
