'use client';
// Flow: the platform as the catalog wires it - producers → event types → consumers - with what each consumer
// did with each event type over the chosen period. Consumers whose numbers moved since the last refresh pulse,
// so activity is visible as messages flow. Period and event-type filter live in the URL; the event type is taken
// exactly, spaces and all, by the rule of every id filter (server/exactIdFilters.ts), as on the Endpoint page.
import Link from './Link.tsx';
import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useEffect, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { endpointHref, type FlowCounts } from './api.ts';
import { ErrorBox } from './format.tsx';
import { EdgeRate } from './charts/HistoryCharts.tsx';
import { flowQuery, flowTypesQuery } from './queries.ts';
import { flowSearch, parseSearch, toSearch } from './urlState.ts';
import { useRefreshing } from './refreshing.ts';

const PERIODS = [
  [5, '5 min'],
  [15, '15 min'],
  [60, '1 hour'],
  [240, '4 hours'],
  [1440, '24 hours'],
] as const;

function Num({ n, label, tone }: { n: number; label: string; tone: string }) {
  return (
    <span className={n ? tone : 'text-slate-500'} title={label}>
      {n} <span className="text-[10px] uppercase text-slate-500">{label}</span>
    </span>
  );
}

function ConsumerCard({ endpointId, eventTypeId, counts, truncated, moved, period }: { endpointId: string; eventTypeId: string; counts: FlowCounts; truncated: boolean; moved: number; period: number }) {
  // Unsupported is a failure here as on the Endpoints and Failures pages.
  const failing = counts.failed + counts.deadLettered + counts.unsupported > 0;
  return (
    <Link
      href={endpointHref(endpointId, new URLSearchParams({ eventTypeId }).toString())}
      className={`block rounded border bg-white px-2 py-1.5 text-xs shadow-sm transition hover:shadow ${failing ? 'border-red-300' : 'border-slate-200'} ${moved > 0 ? 'ring-2 ring-sky-300' : ''}`}
      data-consumer={endpointId}
    >
      <div className="flex items-baseline justify-between gap-2">
        <span className="text-sm font-medium">{endpointId}</span>
        {moved > 0 ? <span className="animate-pulse font-semibold text-sky-700">+{moved}</span> : null}
      </div>
      <div className="mt-0.5 flex flex-wrap gap-x-3">
        <Num n={counts.total} label={truncated ? 'events (≥)' : 'events'} tone="text-slate-800" />
        <Num n={counts.completed} label="completed" tone="text-emerald-700" />
        <Num n={counts.failed} label="failed" tone="text-red-700" />
        <Num n={counts.deferred} label="deferred" tone="text-violet-700" />
        <Num n={counts.deadLettered} label="dead-lettered" tone="text-rose-800" />
        <Num n={counts.pending} label="pending" tone="text-sky-700" />
        {/* Every outcome the total counts, so the numbers add up to it. */}
        <Num n={counts.unsupported} label="unsupported" tone="text-orange-700" />
        <Num n={counts.skipped} label="skipped" tone="text-slate-700" />
      </div>
      <EdgeRate endpointId={endpointId} eventTypeId={eventTypeId} periodMinutes={period} />
    </Link>
  );
}

export function FlowView() {
  const params = useSearchParams();
  const router = useRouter();
  const pathname = usePathname();
  const { period, eventTypeId } = parseSearch(flowSearch, params);
  // A period or event-type choice is a history entry, as on the other list pages: Back undoes it and stays on Flow
  // (replacing the entry made Back leave the page). The URL is canonical (defaults left out), and a choice that
  // leaves it as it is adds no entry.
  const set = (k: 'period' | 'eventTypeId', v: string) => {
    const qs = toSearch(flowSearch, parseSearch(flowSearch, new URLSearchParams({ ...Object.fromEntries(params), [k]: v })));
    if (qs === params.toString()) return;
    router.push(`${pathname}${qs ? `?${qs}` : ''}`);
  };
  const q = useQuery(flowQuery(period, eventTypeId));
  // Not q.isFetching itself: the server and a hydrating browser can disagree on it (refreshing.ts).
  const refreshing = useRefreshing(q);
  const all = useQuery(flowTypesQuery());
  // The applied type is a choice even when the catalog does not name it (a shared link, a type with spaces): the box
  // then shows the filter the page is under, not "all", as on the Endpoint page.
  const typeIds = [...new Set([...(all.data?.eventTypes ?? []).map((t) => t.eventTypeId), ...(eventTypeId ? [eventTypeId] : [])])];

  // What moved since the previous refresh, per event type + consumer.
  const previous = useRef(new Map<string, number>());
  const [moved, setMoved] = useState(new Map<string, number>());
  useEffect(() => {
    if (!q.data) return;
    const next = new Map<string, number>();
    const delta = new Map<string, number>();
    for (const t of q.data.eventTypes)
      for (const c of t.consumers) {
        const key = `${t.eventTypeId}\u0000${c.endpointId}`;
        next.set(key, c.counts.total);
        const before = previous.current.get(key);
        if (before !== undefined && c.counts.total > before) delta.set(key, c.counts.total - before);
      }
    previous.current = next;
    setMoved(delta);
  }, [q.data]);

  return (
    <section>
      <div className="mb-3 flex flex-wrap items-center gap-3">
        <h1 className="text-xl font-semibold">Flow</h1>
        <label className="text-sm text-slate-600">
          Period{' '}
          <select aria-label="Period" value={period} onChange={(e) => set('period', e.target.value)} className="rounded border border-slate-300 px-1 py-0.5">
            {PERIODS.map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        </label>
        <label className="text-sm text-slate-600">
          Event type{' '}
          <select aria-label="Event type" value={eventTypeId} onChange={(e) => set('eventTypeId', e.target.value)} className="rounded border border-slate-300 px-1 py-0.5">
            <option value="">all</option>
            {typeIds.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <span className="text-xs text-slate-500">{refreshing ? 'refreshing…' : 'live, every 5 s'}</span>
      </div>
      <ErrorBox error={q.error} />
      {eventTypeId && q.data?.eventTypes.length === 0 ? <p className="text-sm text-slate-600">The catalog has no event type “{eventTypeId}”.</p> : null}
      <div className="space-y-2" data-testid="flow">
        {(q.data?.eventTypes ?? []).map((t) => (
          <div key={t.eventTypeId} className="grid grid-cols-1 items-center gap-2 rounded md:grid-cols-[1fr_auto_1fr_auto_2fr] border border-slate-200 bg-white p-2">
            <div className="flex flex-wrap gap-1 md:justify-end">
              {t.producers.length === 0 ? <span className="text-xs text-slate-500">no producer in the catalog</span> : null}
              {t.producers.map((p) => (
                <Link key={p} href={endpointHref(p)} className="rounded bg-slate-100 px-2 py-0.5 text-xs hover:bg-slate-200">
                  {p}
                </Link>
              ))}
            </div>
            <span className="hidden text-slate-500 md:inline" aria-hidden="true">→</span>
            <div className="rounded border border-sky-300 bg-sky-50 px-2 py-1 text-center text-sm font-medium text-sky-900">{t.eventTypeId}</div>
            <span className="hidden text-slate-500 md:inline" aria-hidden="true">→</span>
            <div className="grid gap-1 md:grid-cols-2">
              {t.consumers.length === 0 ? <span className="text-xs text-slate-500">no consumer</span> : null}
              {t.consumers.map((c) => (
                <ConsumerCard key={c.endpointId} endpointId={c.endpointId} eventTypeId={t.eventTypeId} counts={c.counts} truncated={c.truncated} moved={moved.get(`${t.eventTypeId}\u0000${c.endpointId}`) ?? 0} period={period} />
              ))}
            </div>
          </div>
        ))}
      </div>
    </section>
  );
}
