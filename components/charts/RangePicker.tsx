'use client';
// Time range for the charts: 1 h / 24 h / 7 d / 30 d, or a custom range (two local date-times).
import { useState } from 'react';
import { useHydrated } from '../refreshing.ts';
import { RANGES, type TimeRange } from './metricsApi.ts';

const toLocal = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

export function RangePicker({ value, onChange }: { value: TimeRange; onChange: (r: TimeRange) => void }) {
  const [from, setFrom] = useState(() => toLocal(value.from ?? Date.now() - 3_600_000));
  const [to, setTo] = useState(() => toLocal(value.to ?? Date.now()));
  // A custom range that changes from outside (Back, Forward, a link: Monitor keeps it in the URL) sets the boxes;
  // adjusting state while rendering, React's pattern for state derived from a changed prop.
  const [seen, setSeen] = useState({ from: value.from, to: value.to });
  if (value.from !== seen.from || value.to !== seen.to) {
    setSeen({ from: value.from, to: value.to });
    if (value.from !== undefined) setFrom(toLocal(value.from));
    if (value.to !== undefined) setTo(toLocal(value.to));
  }
  // The boxes show local wall-clock times, which the server (its own zone) cannot render: a custom range opened
  // from a URL shows them once hydrated, so the server's HTML and the browser's first render agree.
  const hydrated = useHydrated();
  const btn = (active: boolean) => `rounded px-2 py-0.5 text-xs ${active ? 'bg-slate-800 text-white' : 'bg-slate-100 text-slate-700 hover:bg-slate-200'}`;
  return (
    <div className="flex flex-wrap items-center gap-1" role="group" aria-label="Time range" data-testid="range-picker">
      {RANGES.map(([k]) => (
        <button key={k} type="button" className={btn(value.key === k)} onClick={() => onChange({ key: k })} aria-pressed={value.key === k}>
          {k}
        </button>
      ))}
      <button type="button" className={btn(value.key === 'custom')} aria-pressed={value.key === 'custom'} onClick={() => onChange({ key: 'custom', from: Date.parse(from), to: Date.parse(to) })}>
        custom
      </button>
      {value.key === 'custom' && hydrated ? (
        <form
          className="flex items-center gap-1 text-xs"
          onSubmit={(e) => {
            e.preventDefault();
            const f = Date.parse(from);
            const t = Date.parse(to);
            if (!Number.isNaN(f) && !Number.isNaN(t) && f < t) onChange({ key: 'custom', from: f, to: t });
          }}
        >
          <input aria-label="From" type="datetime-local" value={from} onChange={(e) => setFrom(e.target.value)} className="rounded border border-slate-300 px-1" />
          <span>–</span>
          <input aria-label="To" type="datetime-local" value={to} onChange={(e) => setTo(e.target.value)} className="rounded border border-slate-300 px-1" />
          <button type="submit" className="rounded bg-slate-200 px-2 py-0.5">Apply</button>
        </form>
      ) : null}
    </div>
  );
}
