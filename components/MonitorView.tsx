'use client';
// Monitor: a wall display. KPI banner, the stored history (throughput and failures for the platform and per
// endpoint, from GET /api/metrics: it survives reloads and restarts), endpoints banded Failing / Watching /
// Healthy with their counts, a "stale data" banner when refreshes fail, and no refreshing while the tab is
// hidden (TanStack Query pauses interval refetches in background tabs). The charts' time range is in the URL
// (`range`, and `from`/`to` for a custom one): each choice is a history entry, so Back undoes it, and a reload or a
// shared link keeps it. Every link to an Endpoint page (a failure bar, an endpoint's card) opens its charts on the
// same range.
import Link from './Link.tsx';
import { useEffect, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { endpointHref, type EndpointOverview } from './api.ts';
import { EvidenceUnknown } from './EvidenceUnknown.tsx';
import { formatDuration, useNow } from './format.tsx';
import { bandOf, type Band } from './monitorBands.ts';
import { MonitorHistory } from './charts/HistoryCharts.tsx';
import { rangeFromSearch, searchFromRange, withEndpointRange } from './charts/rangeUrl.ts';
import { endpointsQuery } from './queries.ts';
import { useTimeZoneMode } from './timeZone.tsx';
import { monitorSearch } from './urlState.ts';
import { useUrlState } from './useUrlState.ts';


function usePageVisible(): boolean {
  const [visible, setVisible] = useState(true);
  useEffect(() => {
    const on = () => setVisible(document.visibilityState === 'visible');
    on();
    document.addEventListener('visibilitychange', on);
    return () => document.removeEventListener('visibilitychange', on);
  }, []);
  return visible;
}

const BAND_STYLE: Record<Band, { box: string; title: string }> = {
  Failing: { box: 'border-red-300 bg-red-50', title: 'text-red-800' },
  Watching: { box: 'border-amber-300 bg-amber-50', title: 'text-amber-900' },
  Healthy: { box: 'border-emerald-200 bg-emerald-50', title: 'text-emerald-800' },
};

export function MonitorView() {
  const now = useNow(1000);
  const visible = usePageVisible();
  const { search, update } = useUrlState(monitorSearch);
  const zone = useTimeZoneMode();
  const q = useQuery({ ...endpointsQuery(), retry: 0 });
  const endpoints = q.data?.endpoints ?? [];
  const sum = (f: (e: EndpointOverview) => number) => endpoints.reduce((s, e) => s + f(e), 0);
  const stale = q.isError && q.data !== undefined;
  const bands: Band[] = ['Failing', 'Watching', 'Healthy'];
  const range = rangeFromSearch(search);

  return (
    <section>
      <div className="mb-3 flex items-center gap-3">
        <h1 className="text-xl font-semibold">Monitor</h1>
        {/* Relative to the clock of whoever rendered it: the server's text is replaced at the next tick. */}
        <span className="text-xs text-slate-500" data-testid="monitor-refresh" suppressHydrationWarning>
          {!visible ? 'paused while hidden' : q.dataUpdatedAt ? `updated ${formatDuration(Math.max(0, now - q.dataUpdatedAt))} ago` : 'loading…'}
        </span>
      </div>
      {stale || (q.isError && !q.data) ? (
        <div role="alert" className="mb-3 rounded border border-amber-300 bg-amber-100 px-3 py-2 text-sm font-medium text-amber-900">
          Stale data: the last refresh failed ({q.error instanceof Error ? q.error.message : 'error'})
          {q.dataUpdatedAt ? `; showing data from ${formatDuration(now - q.dataUpdatedAt)} ago` : ''}.
        </div>
      ) : null}
      <div className="mb-4 grid grid-cols-2 gap-3 md:grid-cols-5" data-testid="kpis">
        {[
          ['Failed', sum((e) => e.counts.failed), 'text-red-700'],
          ['Deferred', sum((e) => e.counts.deferred), 'text-violet-700'],
          ['Pending', sum((e) => e.counts.pending), 'text-sky-700'],
          ['Handoffs', sum((e) => e.counts.handoff), 'text-amber-700'],
          ['Completed', sum((e) => e.counts.completed), 'text-emerald-700'],
        ].map(([label, n, tone]) => (
          <div key={label as string} className="rounded border border-slate-200 bg-white p-3">
            <div className="text-xs uppercase tracking-wide text-slate-500">{label}</div>
            <div className={`text-3xl font-semibold ${tone as string}`}>{(n as number).toLocaleString()}</div>
          </div>
        ))}
      </div>
      <MonitorHistory
        endpointIds={endpoints.map((e) => e.endpointId).sort()}
        range={range}
        onRangeChange={(r) => update(searchFromRange(r, zone), 'push')}
      />
      {bands.map((band) => {
        const list = endpoints.filter((e) => bandOf(e) === band).sort((a, b) => b.counts.failed - a.counts.failed || a.endpointId.localeCompare(b.endpointId));
        if (list.length === 0) return null;
        return (
          <div key={band} className={`mb-3 rounded border p-3 ${BAND_STYLE[band].box}`} data-band={band}>
            <h2 className={`mb-2 text-sm font-semibold uppercase tracking-wide ${BAND_STYLE[band].title}`}>
              {band} ({list.length})
            </h2>
            <div className="grid gap-2 md:grid-cols-2 xl:grid-cols-3">
              {list.map((e) => (
                <Link key={e.endpointId} href={withEndpointRange(endpointHref(e.endpointId), range, zone)} className="block rounded border border-white/60 bg-white p-2 shadow-sm hover:shadow">
                  <div className="flex items-baseline justify-between">
                    <span className="font-medium">{e.endpointId}</span>
                    <span className="text-xs text-slate-500">heartbeat {e.heartbeat.status}
                      {e.heartbeat.busy ? ' · busy' : ''}
                    </span>
                  </div>
                  <div className="mt-1 flex items-end justify-between gap-2">
                    <div className="grid grid-cols-3 gap-3 text-sm">
                      <div>
                        <div className="text-xs text-slate-500">Failed</div>
                        <div className={e.counts.failed ? 'font-semibold text-red-700' : 'text-slate-500'}>{e.counts.failed}</div>
                      </div>
                      <div>
                        <div className="text-xs text-slate-500">Deferred</div>
                        <div className={e.counts.deferred ? 'font-semibold text-violet-700' : 'text-slate-500'}>{e.counts.deferred}</div>
                      </div>
                      <div>
                        <div className="text-xs text-slate-500">Pending</div>
                        <div className={e.counts.pending ? 'font-semibold text-sky-700' : 'text-slate-500'}>{e.counts.pending}</div>
                      </div>
                    </div>
                  </div>
                  {/* Why an endpoint with zero counts is watched: its counter document no longer parses (logged). */}
                  {e.countersUnreadable ? (
                    <div className="mt-1 text-xs text-red-700" data-counters-unreadable>
                      counts unreadable: shown as 0
                    </div>
                  ) : null}
                  {/* Why an endpoint with heartbeat On may be watched: its overdue probe could not be checked. */}
                  {e.heartbeat.evidenceUnknown ? <EvidenceUnknown className="mt-1 block text-xs text-slate-700" /> : null}
                </Link>
              ))}
            </div>
          </div>
        );
      })}
    </section>
  );
}
