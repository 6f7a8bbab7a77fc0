'use client';
// The charts of the stored time series (GET /api/metrics) on Monitor, the Endpoint page and Flow. The series are
// kept in the store (the Resolver's minute buckets, the backlog samples), so they survive a reload and a restart.
// Clicking a failure bar opens the endpoint's event list for that bucket.
import { useRouter } from 'next/navigation';
import { useTimeZoneMode } from '../timeZone.tsx';
import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { metricsQuery } from '../queries.ts';
import { TimeChart } from './TimeChart.tsx';
import { RangePicker } from './RangePicker.tsx';
import { failuresHref, pointsOf, sumOf, type TimeRange } from './metricsApi.ts';
import { withEndpointRange } from './rangeUrl.ts';

const GREEN = '#059669';
const RED = '#dc2626';
const FAILURES = ['failed', 'deadLettered', 'unsupported'];

function Status({ q }: { q: { isLoading: boolean; error: unknown } }) {
  if (q.isLoading) return <span className="text-xs text-slate-500">loading…</span>;
  if (q.error) return <span className="text-xs text-red-700">{q.error instanceof Error ? q.error.message : 'failed'}</span>;
  return null;
}

/**
 * Monitor: the platform's throughput and failures, then one small chart per endpoint. The range is the page's
 * (Monitor keeps it in the URL), so Back, a reload and a shared link show the same window; a failure bar opens the
 * Endpoint page on the same range.
 */
export function MonitorHistory({ endpointIds, range, onRangeChange }: { endpointIds: string[]; range: TimeRange; onRangeChange: (r: TimeRange) => void }) {
  const router = useRouter();
  const zone = useTimeZoneMode();
  const qc = useQueryClient();
  const q = useQuery(metricsQuery({ range }));
  const bucket = q.data?.bucketSeconds ?? 60;
  // A click on the platform chart opens the endpoint that failed most in that bucket (from the small multiples).
  const openWorst = (t: number) => {
    let best: { ep: string; n: number } | undefined;
    for (const ep of endpointIds) {
      const m = qc.getQueryData(metricsQuery({ range, endpointId: ep }).queryKey);
      const n = sumOf(m, FAILURES).find(([x]) => x === t)?.[1] ?? 0;
      if (n > 0 && (!best || n > best.n)) best = { ep, n };
    }
    if (best) router.push(withEndpointRange(failuresHref(best.ep, t, bucket), range, zone));
  };
  return (
    <section className="mb-4 rounded border border-slate-200 bg-white p-3" data-testid="monitor-history">
      <div className="mb-2 flex flex-wrap items-center justify-between gap-2">
        <h2 className="text-sm font-semibold uppercase tracking-wide text-slate-600">Throughput and failures</h2>
        <div className="flex items-center gap-2">
          <Status q={q} />
          <RangePicker value={range} onChange={onRangeChange} />
        </div>
      </div>
      <TimeChart
        testId="platform-chart"
        ariaLabel="Handled and failed events per bucket, whole platform"
        series={[
          { name: 'handled', label: 'handled', color: GREEN, points: pointsOf(q.data, 'handled'), bars: true },
          { name: 'failures', label: 'failed + dead-lettered + unsupported', color: RED, points: sumOf(q.data, FAILURES), bars: true },
        ]}
        onPick={(t, v) => {
          if ((v.failures ?? 0) > 0) openWorst(t);
        }}
      />
      <p className="mt-1 text-xs text-slate-500">per {bucket >= 3600 ? `${bucket / 3600} h` : `${bucket / 60} min`}; click a failure bar to open the events of that {bucket === 60 ? 'minute' : 'bucket'}</p>
      <div className="mt-3 grid gap-3 md:grid-cols-2 xl:grid-cols-3" data-testid="endpoint-multiples">
        {endpointIds.map((ep) => (
          <EndpointMini key={ep} endpointId={ep} range={range} />
        ))}
      </div>
    </section>
  );
}

function EndpointMini({ endpointId, range }: { endpointId: string; range: TimeRange }) {
  const q = useQuery(metricsQuery({ range, endpointId }));
  const router = useRouter();
  const zone = useTimeZoneMode();
  const bucket = q.data?.bucketSeconds ?? 60;
  return (
    <div className="rounded border border-slate-100 p-2" data-endpoint-chart={endpointId}>
      <div className="flex items-baseline justify-between text-xs">
        <span className="font-medium text-slate-700">{endpointId}</span>
        <Status q={q} />
      </div>
      <TimeChart
        compact
        height={70}
        ariaLabel={`Handled and failed events of ${endpointId}`}
        series={[
          { name: 'handled', label: 'handled', color: GREEN, points: pointsOf(q.data, 'handled'), bars: true },
          { name: 'failures', label: 'failures', color: RED, points: sumOf(q.data, FAILURES), bars: true },
        ]}
        onPick={(t, v) => {
          if ((v.failures ?? 0) > 0) router.push(withEndpointRange(failuresHref(endpointId, t, bucket), range, zone));
        }}
      />
    </div>
  );
}

/**
 * Endpoint page: handled/failed, latency percentiles, backlog. The range is the page's (in its URL, beside the event
 * filters), and so is a failure bar's click: the page sets its filters to that bucket and keeps the range.
 */
export function EndpointHistory({
  endpointId,
  range,
  onRangeChange,
  onOpenFailures,
}: {
  endpointId: string;
  range: TimeRange;
  onRangeChange: (r: TimeRange) => void;
  /** A click on a failure bar: the failed events of the bucket starting at `t` (epoch ms). */
  onOpenFailures: (t: number, bucketSeconds: number) => void;
}) {
  const [open, setOpen] = useState(true);
  const q = useQuery(metricsQuery({ range, endpointId, enabled: open }));
  const bucket = q.data?.bucketSeconds ?? 60;
  return (
    <section className="mb-4 rounded border border-slate-200 bg-white p-3" data-testid="endpoint-history">
      <div className="flex flex-wrap items-center justify-between gap-2">
        <button type="button" className="text-sm font-semibold uppercase tracking-wide text-slate-600" onClick={() => setOpen(!open)} aria-expanded={open}>
          {open ? '▾' : '▸'} History
        </button>
        {open ? (
          <div className="flex items-center gap-2">
            <Status q={q} />
            <RangePicker value={range} onChange={onRangeChange} />
          </div>
        ) : null}
      </div>
      {open ? (
        <div className="mt-2 grid gap-3 lg:grid-cols-3">
          <div>
            <h3 className="text-xs text-slate-500">Handled / failed</h3>
            <TimeChart
              testId="endpoint-outcomes-chart"
              height={160}
              ariaLabel={`Handled and failed events of ${endpointId}`}
              series={[
                { name: 'handled', label: 'handled', color: GREEN, points: pointsOf(q.data, 'handled'), bars: true },
                { name: 'failures', label: 'failures', color: RED, points: sumOf(q.data, FAILURES), bars: true },
              ]}
              onPick={(t, v) => {
                if ((v.failures ?? 0) > 0) onOpenFailures(t, bucket);
              }}
            />
          </div>
          <div>
            <h3 className="text-xs text-slate-500">Handling latency (request enqueued → response recorded)</h3>
            <TimeChart
              testId="endpoint-latency-chart"
              height={160}
              durationMs
              ariaLabel={`Latency percentiles of ${endpointId}`}
              series={[
                { name: 'latencyP50', label: 'p50', color: '#0284c7', points: pointsOf(q.data, 'latencyP50') },
                { name: 'latencyP95', label: 'p95', color: '#d97706', points: pointsOf(q.data, 'latencyP95') },
                { name: 'latencyP99', label: 'p99', color: '#7c3aed', points: pointsOf(q.data, 'latencyP99') },
              ]}
            />
          </div>
          <div>
            <h3 className="text-xs text-slate-500">Backlog of its topic (sampled each minute)</h3>
            <TimeChart
              testId="endpoint-backlog-chart"
              height={160}
              ariaLabel={`Backlog of ${endpointId}`}
              series={[
                { name: 'backlogActive', label: 'active', color: '#0f766e', points: pointsOf(q.data, 'backlogActive') },
                { name: 'backlogDeadLetter', label: 'dead-letter', color: RED, points: pointsOf(q.data, 'backlogDeadLetter') },
                { name: 'backlogScheduled', label: 'scheduled', color: '#64748b', points: pointsOf(q.data, 'backlogScheduled') },
              ]}
            />
          </div>
        </div>
      ) : null}
    </section>
  );
}

/** Flow: the rate of one edge (event type → consumer) over the flow's period, per minute. */
export function EdgeRate({ endpointId, eventTypeId, periodMinutes }: { endpointId: string; eventTypeId: string; periodMinutes: number }) {
  const q = useQuery(metricsQuery({ range: { key: periodMinutes <= 60 ? '1h' : '24h' }, endpointId, eventTypeId, bucket: periodMinutes <= 60 ? '1m' : '5m' }));
  const total = sumOf(q.data, ['handled', ...FAILURES, 'skipped']);
  const recent = total.slice(-(periodMinutes <= 60 ? Math.max(1, periodMinutes) : Math.max(1, Math.round(periodMinutes / 5))));
  const perMin = recent.reduce((a, [, v]) => a + (v ?? 0), 0) / Math.max(1, periodMinutes);
  return (
    <div className="mt-1" data-edge={`${eventTypeId}>${endpointId}`}>
      <div className="text-[10px] text-slate-500">{Math.round(perMin * 10) / 10}/min over the period</div>
      <TimeChart compact height={40} ariaLabel={`Rate of ${eventTypeId} to ${endpointId}`} series={[{ name: 'rate', label: 'outcomes', color: '#0284c7', points: total, bars: true }]} />
    </div>
  );
}
